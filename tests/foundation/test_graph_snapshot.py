"""The definitions graph, written down: every asset key with its group, kinds, owners, code
version, partitions, deps and checks, plus job, sensor and schedule names. An accidental
change to the graph (a renamed asset, a lost check, a dep that moved) fails this test and
shows up in review as a diff of ``graph_snapshot.json``.

Update after an intended change:  ``SNAPSHOT_UPDATE=1 pytest tests/foundation/test_graph_snapshot.py``

Code versions are recorded as *present* (every asset that should have one has one), not
literally: they are content hashes of prompts and config slices, so every prompt or config
edit would rewrite the snapshot, and that edit is already visible in its own diff.
"""

from __future__ import annotations

import difflib
import json
import os
from pathlib import Path

import dagster as dg

SNAPSHOT = Path(__file__).with_name("graph_snapshot.json")


def _partitions(pdef: dg.PartitionsDefinition | None) -> str | None:
    if pdef is None:
        return None
    if isinstance(pdef, dg.DynamicPartitionsDefinition):
        return f"dynamic:{pdef.name}"
    if isinstance(pdef, dg.StaticPartitionsDefinition):
        return "static:" + ",".join(pdef.get_partition_keys())
    return type(pdef).__name__


def graph_snapshot() -> dict:
    from definitions import build_defs

    defs = build_defs()
    graph = defs.resolve_asset_graph()
    checks: dict[str, list[str]] = {}
    for ck in graph.asset_check_keys:
        spec = graph.get_check_spec(ck)
        checks.setdefault(ck.asset_key.to_user_string(), []).append(ck.name + (" (blocking)" if spec.blocking else ""))
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        name = key.to_user_string()
        assets[name] = {
            "group": node.group_name,
            "kinds": sorted(node.kinds),
            "owners": sorted(node.owners),
            "code_version": node.code_version is not None,
            "partitions": _partitions(node.partitions_def),
            "deps": sorted(k.to_user_string() for k in node.parent_keys),
            "checks": sorted(checks.get(name, [])),
        }
    return {
        "assets": assets,
        "jobs": sorted(j.name for j in defs.resolve_all_job_defs() if not j.name.startswith("__")),
        "sensors": sorted(s.name for s in defs.sensors or []),
        "schedules": sorted(s.name for s in defs.schedules or []),
    }


def test_graph_matches_snapshot(monkeypatch):
    monkeypatch.delenv("SUBTEXT_BENCHMARKS", raising=False)
    current = json.dumps(graph_snapshot(), indent=1, sort_keys=True) + "\n"
    if os.environ.get("SNAPSHOT_UPDATE") == "1" or not SNAPSHOT.exists():
        SNAPSHOT.write_text(current)
    expected = SNAPSHOT.read_text()
    if current != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(True), current.splitlines(True), "graph_snapshot.json", "current graph", n=2
            )
        )
        raise AssertionError(
            "the definitions graph changed; if intended, run "
            "SNAPSHOT_UPDATE=1 pytest tests/foundation/test_graph_snapshot.py\n" + diff[:8000]
        )
