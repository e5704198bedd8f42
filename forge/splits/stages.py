"""The three shared stages of every benchmark, Dagster-free: splits, gates, export.

``assets/splits/factory.py`` wraps each in an asset; the functions here read tables,
compute, and return plain data: the rows to write, metadata and check outcomes (``Check``).
Metadata values are plain Python; ``Markdown`` and ``FilePath`` mark strings the asset shows
as markdown or a path, and dicts / lists are shown as JSON.

What differs between benchmarks comes from the spec (``forge/benchmarks``), never from its
name: the option policy (fixed-order options are never re-balanced), the blind policy
(drop / report / off, per item or per pool) and the unit that a gate never splits.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.settings import profiles_of, settings_hash
from forge.benchmarks.spec import BenchmarkSpec, BlindAction
from forge.llm.prompts import load_prompt
from forge.llm.stub import StubOutputError, ensure_no_stub, stub_made
from forge.provenance.lineage import union as lineage_union
from forge.provenance.versioning import content_hash, sha256_bytes, sha256_file
from forge.releases.gold import with_gold
from forge.review.card import human_figures
from forge.review.stages import export_gate as review_gate
from forge.splits import assign as sa
from forge.splits import blind
from forge.splits import gate_steps as steps
from forge.splits import gates as sg
from forge.splits import leakage as lk
from forge.splits.blind import Probe
from forge.splits.card import blind_section, card_for_ui, imported_section, md_table
from forge.splits.config import GateConfig, SplitSizes
from forge.splits.export import existing_versions, exports_frame, read_manifest, write_export
from forge.splits.provenance import benchmark_cost, provenance
from forge.splits.release import assign_with_release_splits
from forge.storage import RejectLog, TableStore
from forge.storage.contracts import load_contract

VERSION = "1"
BLIND_PROMPT = Path(__file__).resolve().parents[2] / "assets" / "splits" / "prompts" / "blind_solver.yaml"
BLIND_STAGE = "blind_solver"
FIELD_REASONS = ("empty_field", "contract_violation", "media_missing")


class Markdown(str):
    """A metadata value shown as markdown."""


class FilePath(str):
    """A metadata value shown as a path."""


@dataclass
class Check:
    name: str
    passed: bool
    severity: str = "warn"  # warn | error
    metadata: dict[str, Any] = field(default_factory=dict)


GATE_CHECKS = {
    "gate_position_balance": "Correct-option share per letter within ± tolerance of uniform in every split (or the "
    "closest the split size allows), after the seeded re-shuffle. Benchmarks whose options "
    "have a fixed order are never re-shuffled (figures reported only).",
    "gate_length_bias": "Share of items whose correct option is strictly the longest, minus chance (mean 1/k) ≤ max.",
    "gate_blind_solvability": "A text-only model answers each MCQ up to N times without the image (early stop once the "
    "verdict is decided; one probe per text); units (items, or pools where the benchmark says so) far "
    "above chance (binomial test + min accuracy) are flagged and reported — dropped only with the "
    "opt-in blind.action: drop. Accuracy, LLM cost and the chance that a pure guesser is flagged.",
    "gate_duplicates": "Duplicate items (same question, options, media) and items with (near-)duplicate options.",
    "gate_empty_fields": "Items with empty fields, answers outside the options, misaligned option types or missing media.",
    "gate_stub_items": "Items made by the offline stub LLM backend (refused by the export unless forced).",
}


def read_table(store: TableStore, table: str, parts: list[str] | None = None) -> pd.DataFrame:
    """A table, or an empty frame when it does not exist (yet). A table that exists but cannot
    be read is an error, never "absent": a leakage audit over nothing would pass."""
    return store.read(table, parts=parts) if store.exists(table) else pd.DataFrame()


def read_items(store: TableStore, spec: BenchmarkSpec) -> pd.DataFrame:
    df = read_table(store, spec.items_table)
    # human gold from imported releases replaces LLM-made fields when config/releases.yaml says so
    return with_gold(df, spec.name) if "item_id" in df.columns else pd.DataFrame(columns=sg.COMMON_COLUMNS)


def split_config_slice(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: cfg.get(k) for k in ("seed", "sizes", "min_rest_share", "leakage_keys", "near_duplicate")}


def gate_config_slice(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: cfg.get(k) for k in ("gates", "blind", "seed", "options", "unit_key")}


# -- splits ---------------------------------------------------------------------------------------


def links_for(store: TableStore, items: pd.DataFrame, cfg: dict[str, Any]) -> lk.ItemLinks:
    return lk.build_links(
        items,
        frames=read_table(store, "frames"),
        duplicates=read_table(store, "duplicates"),
        frame_hashes=read_table(store, "frame_hashes"),
        data_dir=store.data_dir,
        kinds=cfg.get("leakage_keys") or lk.KEY_KINDS,
        phash_threshold=int((cfg.get("near_duplicate") or {}).get("phash_threshold", 8)),
    )


def _with_units(groups: pd.Series, items: pd.DataFrame, unit_key: str | None) -> pd.Series:
    """Merge leakage groups that share a unit (a pool is never split across splits)."""
    units = sg.unit_of(items, unit_key) if "labels" in items else {}
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


def compute_splits(store: TableStore, spec: BenchmarkSpec, cfg: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The ``splits`` rows of ``spec`` and metadata figures."""
    items = read_items(store, spec)
    cols = load_contract("splits").column_names
    if items.empty:
        return pd.DataFrame(columns=cols), {
            "note": f"no items: `{spec.items_table}` is missing or empty; nothing to split"
        }
    items = lk.fill_channels(items, read_table(store, "videos"))
    items["item_id"] = items["item_id"].astype(str)
    links = links_for(store, items, cfg)
    groups = _with_units(lk.leakage_groups(items["item_id"], links), items, cfg.get("unit_key"))
    sizes = SplitSizes.from_config(cfg)
    seed = int(cfg.get("seed", 0))
    assigned, kept = assign_with_release_splits(items, groups, sizes, seed)  # imported releases keep their split
    m = assigned.merge(items[["item_id", "category", "task", "source_item_id", "channel"]], on="item_id", how="left")
    m["group_size"] = m.groupby("group_id")["item_id"].transform("size").astype("int64")
    m["benchmark"], m["seed"] = spec.name, seed
    m["version"] = content_hash(VERSION, split_config_slice(cfg))
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
    if cfg.get("unit_key"):
        md["unit_key"] = cfg["unit_key"]
    if kept.kept:
        md["release_split"] = vars(kept)
    for k, v in counts.items():
        md[f"split/{k}"] = int(v)
    return m[cols], md


def leakage_check(store: TableStore, spec: BenchmarkSpec, cfg: dict[str, Any]) -> Check:
    """Audit the written ``splits`` table: linked item pairs (source, channel, near-duplicate
    group, pHash ≤ threshold) that sit in two different splits. Passes only at 0."""
    sp = read_table(store, "splits", parts=[spec.name])
    items = read_items(store, spec)
    if sp.empty or items.empty:
        return Check("no_leakage_across_splits", True, "error", {"items": 0, "note": "no split items"})
    items = lk.fill_channels(items[items["item_id"].astype(str).isin(set(sp["item_id"]))], read_table(store, "videos"))
    rep = lk.cross_split_pairs(sp[["item_id", "split"]], links_for(store, items, cfg))
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


# -- gates ----------------------------------------------------------------------------------------


@dataclass
class GateOutcome:
    tables: dict[str, pd.DataFrame]
    rejects: RejectLog
    metadata: dict[str, Any]
    checks: list[Check]
    engine: Any = None  # the blind solver's engine when it ran (its calls are to be recorded)


def _blind_cost(engine: Any, calls: pd.DataFrame, spec: BenchmarkSpec) -> dict[str, Any]:
    """What the blind test cost this run, and its share of all the benchmark's LLM requests."""
    s = engine.stats()
    requests = s["calls"] + s["cache_hits"]
    recipe = 0
    if len(calls):  # the recipe's requests: its stages (`<name>_*`), not its evaluations
        stage = calls["stage"].astype(str)
        mine = calls[
            stage.str.startswith(f"{spec.name}_")
            & ~stage.str.startswith(spec.asset("eval"))
            & (calls["cache_hit"].astype(bool) | (calls["attempt"] > 0))
        ]
        recipe = int(len(mine))
    return {
        "requests": requests,
        "paid_calls": s["calls"],
        "cache_hits": s["cache_hits"],
        "tokens_in": s["tokens_in"],
        "tokens_out": s["tokens_out"],
        "cost_usd": s["cost_usd"],
        "share_of_benchmark_requests": round(requests / (requests + recipe), 4) if requests + recipe else 0.0,
    }


def run_gates(
    store: TableStore, spec: BenchmarkSpec, cfg: dict[str, Any], engine_factory: Callable[[], Any]
) -> GateOutcome:
    """Gate ``spec``'s split items. ``engine_factory`` makes the LLM engine of the blind probe
    (called only when the probe runs). Imported release items pass unchanged unless a
    ``gates.imported`` opt-in says otherwise (``forge/splits/gate_steps.py``)."""
    gcfg = GateConfig.from_config(cfg)
    name = spec.name
    rej = RejectLog(spec.asset("gated"), "all")
    items = read_items(store, spec)
    sp = read_table(store, "splits", parts=[name])
    md: dict[str, Any] = {
        "options": cfg.get("options"),
        "blind_action": str(gcfg.blind.action),
        "blind_unit": str(gcfg.blind.unit),
    }
    if items.empty or sp.empty:
        return _no_gate_items(spec, items, md, rej)
    imported = sg.imported_ids(items)
    df = sg.normalise_items(items, name)
    df = df.merge(sp[["item_id", "split", "group_id"]], on="item_id", how="inner")
    md["items_without_split"] = int(len(items) - len(df))
    df["reshuffled"] = False
    units = sg.unit_of(df, cfg.get("unit_key"))

    # 1–2. empty fields / contract / media, whole units, duplicate items
    fs = steps.field_and_duplicates(df, units, imported, gcfg, store.data_dir)
    status = fs.status
    # 3. the text-only probe (through the engine: cached, logged to llm_calls); it reports by default
    bc = gcfg.blind
    alive = df[~df["item_id"].isin(status)]
    mcq_alive = alive[alive.apply(sg.is_mcq, axis=1)] if len(alive) else alive
    blind_units = units if bc.unit == "pool" else {}
    probe, engine = Probe(), None
    if bc.enabled and len(mcq_alive):
        sel = mcq_alive.sort_values("item_id")
        sel = sel.head(bc.max_items) if bc.max_items else sel
        engine = engine_factory()
        probe = blind.probe(engine, BLIND_STAGE, name, sel, load_prompt(BLIND_PROMPT), bc, blind_units)
        md["blind_cost"] = _blind_cost(engine, read_table(store, "llm_calls"), spec) | {
            "trials_planned": probe.planned,
            "trials_saved": probe.saved,
            "texts_probed": probe.texts,
        }
    md["guess_drop_probability"] = sg.guess_drop_table(mcq_alive, bc, blind_units) if bc.enabled else {}
    status |= steps.blind_drops(probe, gcfg, imported)
    # 4. correct-option positions per split (never fixed-order options, never imported items by default)
    pos = steps.positions(df[~df["item_id"].isin(status)].copy(), imported, gcfg, (cfg.get("seed", 0), name))
    kept = steps.with_blind_columns(pos.kept, probe)

    for item_id, (reason, detail) in sorted(status.items()):
        rej.add(item_id, reason, "GateReject", detail, related_id=fs.dups.get(item_id))
    results_df = pd.DataFrame(
        steps.result_rows(name, df, status, probe, units, kept), columns=load_contract("gate_results").column_names
    )
    kept["benchmark"] = name
    md |= _gate_metadata(df, kept, results_df, probe, pos, gcfg, imported, fs)
    checks = _gate_checks(cfg, gcfg, md, df, probe, pos, fs, imported)
    return GateOutcome(
        {"gated_items": kept.reindex(columns=load_contract("gated_items").column_names), "gate_results": results_df},
        rej,
        md,
        checks,
        engine,
    )


def _no_gate_items(spec: BenchmarkSpec, items: pd.DataFrame, md: dict[str, Any], rej: RejectLog) -> GateOutcome:
    md["note"] = (
        f"no items: `{spec.items_table}` is missing or empty"
        if items.empty
        else f"no splits for {spec.name}: materialize `{spec.asset('splits')}` first"
    )
    checks = [Check(c, True, "warn", {"items": 0, "note": md["note"]}) for c in GATE_CHECKS]
    empty = {t: pd.DataFrame(columns=load_contract(t).column_names) for t in ("gated_items", "gate_results")}
    return GateOutcome(empty, rej, md, checks)


def _imported_md(gcfg: GateConfig, imported: set[str], kept: pd.DataFrame, pos: Any, fs: Any) -> dict[str, Any]:
    """What the gates did to imported release items (nothing, unless an opt-in said so)."""
    kept_imp = kept[kept["item_id"].isin(imported)]
    return {
        "items": len(imported),
        "kept": len(kept_imp),
        "opt_ins": gcfg.imported.enabled(),
        "reshuffled": int(kept_imp["reshuffled"].sum()) if len(kept_imp) else 0,
        "field_problems_kept": {i: p[0] for i, p in sorted(fs.imported_kept.items())[:20]},
        "positions_as_released": [
            {"split": f.split, "k": f.k, "n": f.n, "max_deviation": f.max_deviation, "counts": f.counts}
            for f in pos.imported
        ],
    }


def _blind_note(gcfg: GateConfig, probe: Probe) -> str:
    bc = gcfg.blind
    if probe.backend == "stub":
        return "blind solver ran on the stub backend: random answers, nothing dropped"
    if not bc.enabled:
        return "off (blind.action: off)"
    if not probe.scores:
        return "no multiple-choice items"
    if bc.action == BlindAction.REPORT:
        return "report (default): flagged units kept; the figures are a text-only baseline"
    return "drop (opt-in blind.action: drop): flagged units dropped" + (
        "" if gcfg.imported.drop_blind_solvable else "; imported release items kept"
    )


def _gate_metadata(
    df: pd.DataFrame,
    kept: pd.DataFrame,
    results_df: pd.DataFrame,
    probe: Probe,
    pos: Any,
    gcfg: GateConfig,
    imported: set[str],
    fs: Any,
) -> dict[str, Any]:
    scores = probe.scores
    reasons = results_df["reason"].value_counts().to_dict()
    flagged = [s for s in scores.values() if s.flagged]
    blind_failed = sum(s.failed for s in scores.values())
    blind_sent = blind_failed + sum(s.trials for s in scores.values())
    lb = sg.length_figure(kept)
    per_split = kept["split"].value_counts().to_dict()
    units = {r["item_id"]: r["unit_id"] for _, r in results_df.iterrows() if r["unit_id"]}
    md: dict[str, Any] = {
        "items_in": len(df),
        "items_kept": len(kept),
        "items_dropped": int((results_df["status"] == "dropped").sum()),
        "dropped_by_reason": reasons,
        "kept_per_split": {k: int(v) for k, v in per_split.items()},
        "blind_accuracy_before": sg.blind_accuracy(list(scores.values())),
        "blind_accuracy_after": sg.blind_accuracy([s for i, s in scores.items() if i in set(kept["item_id"])]),
        "blind_items": len(scores),
        "blind_flagged": len(flagged),
        "blind_units_flagged": len({units.get(s.item_id, s.item_id) for s in flagged}),
        "blind_requests": probe.sent,
        "blind_trials_saved": probe.saved,
        "positions_reshuffled": pos.moved,
        "blind_failed_calls": blind_failed,
        "blind_coverage": round(1 - blind_failed / blind_sent, 4) if blind_sent else 1.0,
        "length_bias_share_longest": round(lb.share_longest, 4),
        "length_bias_excess": round(lb.excess, 4),
        "stub_items": sum(1 for r in kept.to_dict("records") if stub_made(r)),
    }
    if imported:
        md["imported"] = _imported_md(gcfg, imported, kept, pos, fs)
    table = blind.accuracy_table(results_df, df)
    if len(table):
        md["blind_accuracy"] = Markdown(md_table(table.set_index("slice")))
    for k, v in per_split.items():
        md[f"split/{k}"] = int(v)
    return md


def _gate_checks(
    cfg: dict[str, Any],
    gcfg: GateConfig,
    md: dict[str, Any],
    df: pd.DataFrame,
    probe: Probe,
    pos: Any,
    fs: Any,
    imported: set[str],
) -> list[Check]:
    bc = gcfg.blind
    reasons = md["dropped_by_reason"]
    lb = sg.length_figure(pos.kept)
    kept_ids = set(pos.kept["item_id"])
    protected = set() if gcfg.imported.drop_blind_solvable else imported
    blind_md = {
        "items_tested": md["blind_items"],
        "unit": str(bc.unit),
        "action": str(bc.action),
        "trials": bc.trials,
        "early_stop": bc.early_stop,
        "requests": probe.sent,
        "trials_saved": probe.saved,
        "flagged_items": md["blind_flagged"],
        "flagged_units": md["blind_units_flagged"],
        "dropped": reasons.get("blind_solvable", 0),
        "accuracy_before": md["blind_accuracy_before"],
        "accuracy_after": md["blind_accuracy_after"],
        "alpha": bc.alpha,
        "min_accuracy": bc.min_accuracy,
        "guess_drop_probability": md["guess_drop_probability"],
        "model": probe.model or "",
        "backend": probe.backend or "",
        "note": _blind_note(gcfg, probe),
        "failed_calls": md["blind_failed_calls"],
        "coverage": md["blind_coverage"],
        "min_coverage": bc.min_coverage,
    }
    if "blind_cost" in md:
        blind_md["cost"] = md["blind_cost"]
    coverage_ok = md["blind_coverage"] >= bc.min_coverage
    # Report (the default) keeps flagged units and passes with the figures; an opt-in drop passes
    # when every flagged unit it may drop is gone. An outage of the probe is not a pass (error).
    left = [s for s in probe.scores.values() if s.flagged and s.item_id in kept_ids and s.item_id not in protected]
    blind_ok = coverage_ok and (bc.action != BlindAction.DROP or not left)
    fig_json = [
        {
            "split": f.split,
            "k": f.k,
            "n": f.n,
            "max_deviation": f.max_deviation,
            "allowed": f.allowed,
            "counts": f.counts,
        }
        for f in pos.after
    ]
    pos_fail = [f for f in pos.after if not f.passed]
    return [
        Check(
            "gate_position_balance",
            not pos_fail or not gcfg.rebalance_positions,
            "warn",
            {
                "max_deviation": max((f.max_deviation for f in pos.after), default=0.0),
                "max_deviation_before": max((f.max_deviation for f in pos.before), default=0.0),
                "tolerance": gcfg.position_tolerance,
                "reshuffled": pos.moved,
                "option_policy": cfg.get("options"),
                "per_split": fig_json,
                "imported_as_released": sum(f.n for f in pos.imported),  # never moved (gates.imported)
            },
        ),
        Check(
            "gate_length_bias",
            lb.excess <= gcfg.max_length_excess,
            "warn",
            {
                "items": lb.n,
                "share_longest": round(lb.share_longest, 4),
                "chance": round(lb.chance, 4),
                "excess": round(lb.excess, 4),
                "share_shortest": round(lb.share_shortest, 4),
                "max_excess": gcfg.max_length_excess,
            },
        ),
        Check("gate_blind_solvability", blind_ok, "warn" if coverage_ok else "error", blind_md),
        Check(
            "gate_duplicates",
            reasons.get("duplicate_item", 0) == 0 and fs.dup_opts.items_with_duplicates == 0 and fs.member_dups == 0,
            "warn",
            {
                "duplicate_items_dropped": reasons.get("duplicate_item", 0),
                "duplicate_members_kept": fs.member_dups,  # equal items inside units that differ as a whole
                "items_with_duplicate_options": fs.dup_opts.items_with_duplicates,
                "duplicate_option_rate": round(fs.dup_opts.rate, 4),
                "examples": fs.dup_opts.examples,
            },
        ),
        Check(
            "gate_empty_fields",
            not any(reasons.get(k) for k in FIELD_REASONS),
            "warn",
            {k: int(reasons.get(k, 0)) for k in FIELD_REASONS}
            | {
                "unit_member_dropped": int(reasons.get("unit_member_dropped", 0)),
                "failure_rate": round(sum(reasons.get(k, 0) for k in FIELD_REASONS) / len(df), 4),
                "imported_problems_kept": len(fs.imported_kept),
            },
        ),
        Check(
            "gate_stub_items",
            md["stub_items"] == 0,
            "warn",
            {
                "stub_items": md["stub_items"],
                "kept_items": md["items_kept"],
                "note": "the export refuses these unless force_stub" if md["stub_items"] else "none",
            },
        ),
    ]


# -- export ---------------------------------------------------------------------------------------


def exports_dir(store: TableStore) -> Path:
    return store.data_dir / "exports"


def integrity(store: TableStore, name: str) -> tuple[int, list[str]]:
    """Versions checked and files whose bytes no longer match their manifest (should be none)."""
    bad: list[str] = []
    versions = existing_versions(exports_dir(store) / name)
    for _, d in versions:
        for rel, sha in read_manifest(d).get("files", {}).items():
            f = d / rel
            if not f.is_file() or sha256_file(f) != sha:
                bad.append(f"{d.name}/{rel}")
    return len(versions), bad


def card_gates(res: pd.DataFrame) -> dict[str, Any]:
    if res.empty:
        return {}
    b = res[res["blind_trials"].notna() & (res["blind_trials"] > 0)]
    k = b[b["status"] == "kept"]

    def acc(x: pd.DataFrame) -> float:
        return (
            round(float(x["blind_correct"].sum() / x["blind_trials"].sum()), 4)
            if len(x) and x["blind_trials"].sum()
            else 0.0
        )

    return {
        "items before gates": len(res),
        "items kept": int((res["status"] == "kept").sum()),
        "dropped by reason": res["reason"].value_counts().to_dict(),
        "blind solver (text only) accuracy before → after": f"{acc(b)} → {acc(k)} over {len(b)} MCQ items",
        "blind-solvable flagged": int(b["blind_flagged"].fillna(False).astype(bool).sum()),
        "options re-shuffled for position balance": int(res["reshuffled"].sum()),
    }


def run_export(
    store: TableStore, spec: BenchmarkSpec, cfg: dict[str, Any], force_stub: bool
) -> tuple[pd.DataFrame, dict[str, Any], list[Check]]:
    name = spec.name
    gated = read_table(store, "gated_items", parts=[name])
    for c in sg.LIST_COLUMNS:  # Parquet lists come back as numpy arrays
        if c in gated:
            gated[c] = gated[c].map(sg._lst)
    # human review (forge/review, docs/review.md): rejected items leave, and under policy `required`
    # so do items without their accepted verdicts; reviewers' edits arrive as new revisions
    gated, review = _review(store, spec, gated, GateConfig.from_config(cfg).imported.review)
    review["human_figures"] = human_figures(store, name)  # the card's human baselines and judge kappas
    md: dict[str, Any] = {"force_stub": force_stub, "review_coverage": review.get("coverage", "")}
    if review.get("summary"):  # what was reviewed and what is held back, as the card's first line says it
        md["review"] = review["summary"]
    stub_n = sum(1 for r in gated.to_dict("records") if stub_made(r))
    status, refused = "nothing", False
    if gated.empty:
        md["note"] = f"no gated items for {name}: nothing exported (is `{spec.items_table}` empty?)"
    else:
        try:
            if not force_stub:
                ensure_no_stub(gated, what=f"{name} export")
        except StubOutputError as exc:
            refused, status = True, "refused"
            md["note"] = str(exc) + " — or set force_stub: true (run config / config/splits.yaml) to export anyway"
        if not refused:
            lin_backends, lin_models = lineage_union(
                gated["lineage"] if "lineage" in gated else [], gated["backend"], gated["model"].astype(str)
            )
            prov = provenance(
                gated, read_table(store, "source_items"), read_table(store, "videos"), read_table(store, "frames")
            )
            recipe_path = spec.recipe_config_path()
            has_recipe = recipe_path is not None and recipe_path.exists()
            recipe_text = recipe_path.read_text() if has_recipe else "# (no recipe config file)\n"
            cost = benchmark_cost(read_table(store, "llm_calls"), name, len(gated))
            res = read_table(store, "gate_results", parts=[name])
            blind = res[res["blind_trials"].notna()] if len(res) else res
            gates_fig = card_gates(res)
            failed = failed_gates(gated, res, cfg)
            if failed:
                gates_fig["failed gates"] = failed
            ctx = {
                "path_hint": f"data/exports/{name}/<version>",
                "title": spec.title,
                # every backend / model behind the items across stages (lineage), not the last step's label
                "backends": ", ".join(lin_backends) or "unknown",
                "models": ", ".join(lin_models) or "unknown",
                "prompt_hashes": sorted(gated["prompt_hash"].dropna().astype(str).unique()),
                "blind_prompt_hash": ", ".join(sorted(blind["blind_prompt_hash"].dropna().unique()))
                if len(blind)
                else "",
                "blind_model": ", ".join(sorted(blind["blind_model"].dropna().unique())) if len(blind) else "",
                "recipe_config": recipe_text,
                "recipe_config_hash": sha256_bytes(recipe_text.encode())[:12],
                "recipe_config_name": _display_path(recipe_path) if recipe_path is not None else None,
                # which settings profile made the items (paper = the file's top level), with the
                # hash of the settings in effect under it
                "recipe_profiles": {
                    p: settings_hash(recipe_path, p) if recipe_path is not None else None
                    for p in profiles_of(gated.get("extra", pd.Series(dtype=str)))
                },
                "cost": cost,
                "gates": gates_fig,
                "failed_gates": failed,
                # the text-only probe's accuracy and what the gates did to imported release items
                "extra_sections": [x for x in ("\n".join(_card_sections(gated, res, cfg)), *spec.card_sections) if x],
                "review": review,
            }
            stage_cfg = json.loads(json.dumps({k: v for k, v in cfg.items()}, default=str))
            stage_cfg["export"] = dict(stage_cfg.get("export") or {}, force_stub=force_stub)
            stage_cfg["blind_prompt_hash"] = load_prompt(BLIND_PROMPT).hash
            stage_cfg["review"] = {k: review.get(k) for k in ("policy", "reviewers_per_item", "splits_reviewed")}
            out = write_export(
                exports_dir=exports_dir(store),
                data_dir=store.data_dir,
                benchmark=name,
                items=gated,
                provenance=prov,
                split_order=SplitSizes.parse(cfg["sizes"]).names,
                stage_config=stage_cfg,
                card_context=ctx,
                forced_stub=force_stub and stub_n > 0,
                stub_items=stub_n,
                copy_media=bool((cfg.get("export") or {}).get("copy_media", True)),
            )
            status = out.status
            md.update(
                {
                    "export_path": FilePath(str(out.path)),
                    "version": out.version,
                    "content_hash": out.content_hash,
                    "n_items": out.manifest["n_items"],
                    "splits": out.manifest["splits"],
                    "changes": out.manifest.get("changes", {}),
                    "cost_per_item_usd": round(cost["per_item"], 6),
                    "llm_cost_usd": round(cost["cost_usd"], 6),
                }
            )
            for k, v in out.manifest["splits"].items():
                md[f"split/{k}"] = v
            if out.status == "unchanged":
                md["note"] = f"content unchanged since {out.version}: no new version written"
            card = (out.path / "README.md").read_text()
            md["card"] = Markdown(card_for_ui(card, out.path))
            if failed:
                md["failed_gates"] = failed
    md["status"] = status
    md["stub_items"] = stub_n
    n_versions, bad = integrity(store, name)
    checks = [
        Check(
            "export_no_stub",
            stub_n == 0,
            "error" if refused else "warn",
            {
                "stub_items": stub_n,
                "forced": force_stub,
                "outcome": "refused" if refused else ("exported (forced; the card says so)" if stub_n else "none"),
            },
        ),
        Check("export_integrity", not bad, "error", {"versions": n_versions, "modified_files": bad[:20]}),
    ]
    return exports_frame(exports_dir(store), name), md, checks


def _review(
    store: TableStore, spec: BenchmarkSpec, gated: pd.DataFrame, imported_too: bool
) -> tuple[pd.DataFrame, dict]:
    """The human-review gate over the built items. Imported release items were reviewed by the
    paper's annotators and stay as released: they pass unchanged unless ``gates.imported.review``."""
    imported = set() if imported_too or gated.empty else sg.imported_ids(gated)
    if not imported:
        return review_gate(store, spec, gated)
    own = gated["item_id"].isin(imported)
    kept, review = review_gate(store, spec, gated[~own])
    review["imported_not_reviewed"] = int(own.sum())
    return pd.concat([kept, gated[own]], ignore_index=True), review


def _card_sections(gated: pd.DataFrame, res: pd.DataFrame, cfg: dict[str, Any]) -> list[str]:
    """The card's text-only probe section (every benchmark with multiple-choice items) and what
    the gates did to imported release items."""
    gcfg = GateConfig.from_config(cfg)
    out: list[str] = []
    if gated.apply(sg.is_mcq, axis=1).any():
        kept = res[res["status"] == "kept"] if len(res) else res
        tested = kept[kept["blind_trials"].notna()] if len(kept) else kept
        bc = gcfg.blind
        setting = {
            "model": ", ".join(sorted(tested["blind_model"].dropna().astype(str).unique())) if len(tested) else "",
            "backend": ", ".join(sorted(tested["blind_backend"].dropna().astype(str).unique())) if len(tested) else "",
            "trials": bc.trials,
            "temperature": bc.temperature,
            "early_stop": bc.early_stop,
            "action": str(bc.action),
            "note": "The probe is off (`blind.action: off`)." if not bc.enabled else "",
        }
        out += blind_section(blind.accuracy_table(kept, gated) if len(kept) else pd.DataFrame(), setting)
    imported = sg.imported_ids(gated)
    resh = int(gated.loc[gated["item_id"].isin(imported), "reshuffled"].astype(bool).sum()) if imported else 0
    return out + imported_section(len(imported), gcfg.imported.enabled(), resh)


def failed_gates(gated: pd.DataFrame, res: pd.DataFrame, cfg: dict[str, Any]) -> list[str]:
    """The gates the exported items do not pass, in words, recomputed from what is exported
    (length bias, position balance) and from ``gate_results`` (blind-solver coverage)."""
    gcfg = GateConfig.from_config(cfg)
    out = []
    lb = sg.length_figure(gated)
    if lb.n and lb.excess > gcfg.max_length_excess:
        out.append(
            f"length bias: the correct option is the longest in {lb.share_longest:.0%} of {lb.n} items "
            f"(chance {lb.chance:.0%}, allowed excess {gcfg.max_length_excess:.0%})"
        )
    if gcfg.rebalance_positions:
        # imported release items keep the release's letters (gates.imported.rebalance_positions)
        movable = gated if gcfg.imported.rebalance_positions else gated[~gated["item_id"].isin(sg.imported_ids(gated))]
        bad_pos = [f for f in sg.position_figures(movable, gcfg.position_tolerance) if f.max_deviation > f.allowed]
        if bad_pos:
            out.append(
                "position balance: "
                + ", ".join(f"{f.split} deviates {f.max_deviation:.0%} (allowed {f.allowed:.0%})" for f in bad_pos)
            )
    tested = res[res["blind_trials"].notna()] if len(res) else res
    failed = tested["blind_failed"].fillna(0).sum() if "blind_failed" in tested else 0
    if len(tested) and tested["blind_trials"].sum() + failed:
        # answered / asked (early stopping asks fewer than `trials` of a decided item)
        cov = float(tested["blind_trials"].sum()) / float(tested["blind_trials"].sum() + failed)
        if cov < gcfg.blind.min_coverage:
            out.append(
                f"blind solvability: only {cov:.0%} of the blind-solver calls answered "
                f"(floor {gcfg.blind.min_coverage:.0%}); the gate did not run on every item"
            )
    return out


def _display_path(p: Path) -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        return str(p.resolve().relative_to(root))
    except ValueError:
        return p.name
