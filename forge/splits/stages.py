"""The splits stage of every benchmark, Dagster-free: leakage groups assigned whole to splits,
and the audit of the written table (``assets/splits/factory.py`` wraps them).

What differs between benchmarks comes from the spec (``forge/benchmarks``), never from its
name: the unit that a split never divides. Items are read, then gold applied (``forge.gold``).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec
from forge.gold.apply import gold_items
from forge.items.fields import unit_of
from forge.items.outcome import md_table
from forge.items.read import read_table
from forge.provenance.versioning import content_hash
from forge.splits import assign as sa
from forge.splits import leakage as lk
from forge.splits.config import StageSettings
from forge.splits.release import assign_with_release_splits
from forge.storage import TableStore
from forge.storage.contracts import load_contract
from forge.storage.result import Check, Markdown, StageResult

VERSION = "1"  # the splits / gates / export stages' logic version (their code versions)


def links_for(store: TableStore, items: pd.DataFrame, settings: StageSettings) -> lk.ItemLinks:
    return lk.build_links(
        items,
        frames=read_table(store, "frames"),
        duplicates=read_table(store, "duplicates"),
        frame_hashes=read_table(store, "frame_hashes"),
        data_dir=store.data_dir,
        kinds=settings.leakage_keys or lk.KEY_KINDS,
        phash_threshold=settings.phash_threshold,
    )


def _with_units(groups: pd.Series, items: pd.DataFrame, unit_key: str | None) -> pd.Series:
    """Merge leakage groups that share a unit (a pool is never split across splits)."""
    units = unit_of(items, unit_key) if "labels" in items else {}
    if not units:
        return groups
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    first_group: dict[str, str] = {}
    for item_id, unit in units.items():
        g = str(groups[item_id])
        if unit in first_group:
            a, b = find(first_group[unit]), find(g)
            if a != b:
                parent[max(a, b)] = min(a, b)
        else:
            first_group[unit] = g
    return groups.map(lambda g: find(str(g)))


def compute_splits(store: TableStore, spec: BenchmarkSpec, settings: StageSettings) -> StageResult:
    """The ``splits`` rows of ``spec`` (table ``splits``, part ``spec.name``) and metadata figures."""
    items = gold_items(store, spec)
    cols = load_contract("splits").column_names
    if items.empty:
        note = f"no items: `{spec.items_table}` is missing or empty; nothing to split"
        return StageResult({"splits": {spec.name: pd.DataFrame(columns=cols)}}, metadata={"note": note})
    items = lk.fill_channels(items, read_table(store, "videos"))
    items["item_id"] = items["item_id"].astype(str)
    links = links_for(store, items, settings)
    groups = _with_units(lk.leakage_groups(items["item_id"], links), items, settings.unit_key)
    sizes = settings.sizes
    seed = settings.seed
    assigned, kept = assign_with_release_splits(items, groups, sizes, seed)  # imported releases keep their split
    m = assigned.merge(items[["item_id", "category", "task", "source_item_id", "channel"]], on="item_id", how="left")
    m["group_size"] = m.groupby("group_id")["item_id"].transform("size").astype("int64")
    m["benchmark"], m["seed"] = spec.name, seed
    m["version"] = content_hash(VERSION, settings.version_slice("split"))
    rep = lk.cross_split_pairs(assigned, links)
    counts = assigned["split"].value_counts().reindex(sizes.names, fill_value=0)
    md: dict[str, Any] = {
        "items": len(m),
        "groups": int(assigned["group_id"].nunique()),
        "largest_group": int(m["group_size"].max()),
        "largest_group_share": round(float(m["group_size"].max()) / len(m), 4),
        "split_counts": {k: int(v) for k, v in counts.items()},
        "split_targets": {k: round(v, 1) for k, v in sizes.targets(len(m)).items()},
        "stratification_max_error": round(sa.stratification_error(assigned, items), 4),
        "links_by_kind": links.keys["kind"].value_counts().to_dict() | {"phash_pairs": len(links.phash_item_pairs())},
        "cross_split_linked_pairs": rep.total,
        "per_category": Markdown(md_table(sa.split_summary(assigned, items))),
    }
    if settings.unit_key:
        md["unit_key"] = settings.unit_key
    if kept.kept:
        md["release_split"] = vars(kept)
    for k, v in counts.items():
        md[f"split/{k}"] = int(v)
    return StageResult({"splits": {spec.name: m[cols]}}, metadata=md)


def leakage_check(store: TableStore, spec: BenchmarkSpec, settings: StageSettings) -> Check:
    """Audit the written ``splits`` table: linked item pairs (source, channel, near-duplicate
    group, pHash ≤ threshold) that sit in two different splits. Passes only at 0."""
    sp = read_table(store, "splits", parts=[spec.name])
    items = gold_items(store, spec)
    if sp.empty or items.empty:
        return Check("no_leakage_across_splits", True, "error", {"items": 0, "note": "no split items"})
    items = lk.fill_channels(items[items["item_id"].astype(str).isin(set(sp["item_id"]))], read_table(store, "videos"))
    rep = lk.cross_split_pairs(sp[["item_id", "split"]], links_for(store, items, settings))
    return Check(
        "no_leakage_across_splits",
        rep.total == 0,
        "error",
        {
            "items": len(sp),
            "cross_split_pairs": rep.total,
            "near_duplicate_pairs": rep.near_duplicate_pairs,
            "pairs_by_kind": rep.pairs,
            "examples": rep.examples,
        },
    )
