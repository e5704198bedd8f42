"""Exports say what they are (issue #53, point 5), through the export stage itself, no server:
an unreviewed v1 is exported under ``advisory``; switched to ``required`` with nothing accepted,
the export writes no new version and its note says plainly "no reviewed items yet: 0 of N
accepted; the latest export v1 is unreviewed"; v1's card and the build summary keep calling it
not human-reviewed, never the reviewed export."""

from __future__ import annotations

import dagster as dg

from assets.splits.factory import benchmark_defs
from forge.benchmarks.registry import get
from forge.console.build_summary import summarize
from forge.export.card import is_human_reviewed
from forge.storage import TableStore, refresh_catalog
from resources.llm import LLMResource
from resources.storage import StorageResource
from tests.review import world


def test_a_required_export_with_nothing_accepted_names_the_latest_as_unreviewed(tmp_path, monkeypatch):
    def export() -> dict:
        """The export asset as the build runs it (forced: the world's items count as stub-made nowhere)."""
        res = dg.materialize(
            list(benchmark_defs("maia").assets),
            selection=["maia_export"],
            resources={"storage": StorageResource(data_dir=str(tmp_path)), "llm": LLMResource(backend="stub")},
            run_config={"ops": {"maia_export": {"config": {"force_stub": True}}}},
        )
        (mat,) = res.asset_materializations_for_node("maia_export")
        return {k: v.value for k, v in mat.metadata.items()}

    monkeypatch.setenv("SUBTEXT_REVIEW_CONFIG", str(tmp_path / "none.yaml"))  # no file: the declaration
    store = TableStore(tmp_path)
    world.maia(store, n=3)
    spec = get("maia")

    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "advisory")
    md = export()
    assert md["status"] == "written" and md["export_path"].endswith("maia/v1"), md
    card = (tmp_path / "exports" / "maia" / "v1" / "README.md").read_text()
    assert not is_human_reviewed(card) and "Not human-reviewed" in card

    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "required")
    md = export()
    assert md["note"] == "no reviewed items yet: 0 of 3 accepted; the latest export v1 is unreviewed"
    assert sorted(p.name for p in (tmp_path / "exports" / "maia").iterdir()) == ["v1"]  # no new version
    assert not is_human_reviewed((tmp_path / "exports" / "maia" / "v1" / "README.md").read_text())

    refresh_catalog(store)
    text = "\n".join(summarize(store, [spec]).lines())
    (line,) = [x for x in text.splitlines() if x.strip().startswith("maia v1:")]
    assert "NOT human-reviewed" in line, line
