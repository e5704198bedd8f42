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

from forge.benchmarks.spec import BenchmarkSpec, BlindAction
from forge.checks import mcq
from forge.contracts import load_contract
from forge.lineage import union as lineage_union
from forge.llm.prompts import load_prompt
from forge.llm.stub import StubOutputError, ensure_no_stub, stub_made
from forge.recipes.settings import profiles_of, settings_hash
from forge.releases.gold import with_gold
from forge.splits import assign as sa
from forge.splits import gates as sg
from forge.splits import leakage as lk
from forge.splits.card import card_for_ui, md_table
from forge.splits.config import GateConfig, SplitSizes
from forge.splits.export import existing_versions, exports_frame, read_manifest, write_export
from forge.splits.provenance import benchmark_cost, provenance
from forge.splits.release import assign_with_release_splits
from forge.storage import RejectLog, TableStore
from forge.versioning import content_hash, sha256_bytes, sha256_file

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
    "gate_blind_solvability": "A text-only model answers each MCQ N times without the image; units (items, or pools "
    "where the benchmark says so) far above chance (binomial test + min accuracy) are "
    "dropped or reported per the benchmark's policy. Accuracy, LLM cost and the chance that "
    "a pure guesser is flagged.",
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
    """Gate ``spec``'s split items. ``engine_factory`` makes the LLM engine of the blind test
    (called only when the blind test runs)."""
    gcfg = GateConfig.from_config(cfg)
    name = spec.name
    rej = RejectLog(spec.asset("gated"), "all")
    gi_cols = load_contract("gated_items").column_names
    gr_cols = load_contract("gate_results").column_names
    items = read_items(store, spec)
    sp = read_table(store, "splits", parts=[name])
    md: dict[str, Any] = {
        "options": cfg.get("options"),
        "blind_action": str(gcfg.blind.action),
        "blind_unit": str(gcfg.blind.unit),
    }
    if items.empty or sp.empty:
        md["note"] = (
            f"no items: `{spec.items_table}` is missing or empty"
            if items.empty
            else f"no splits for {name}: materialize `{spec.asset('splits')}` first"
        )
        checks = [Check(c, True, "warn", {"items": 0, "note": md["note"]}) for c in GATE_CHECKS]
        return GateOutcome(
            {"gated_items": pd.DataFrame(columns=gi_cols), "gate_results": pd.DataFrame(columns=gr_cols)},
            rej,
            md,
            checks,
        )
    df = sg.normalise_items(items, name)
    df = df.merge(sp[["item_id", "split", "group_id"]], on="item_id", how="inner")
    md["items_without_split"] = int(len(items) - len(df))
    df["reshuffled"] = False
    units = sg.unit_of(df, cfg.get("unit_key"))
    status: dict[str, tuple[str, str]] = {}

    # 1. empty fields / contract / media
    for _, r in df.iterrows():
        p = sg.field_problem(r, store.data_dir if gcfg.check_media_files else None)
        if p:
            status[r["item_id"]] = p
    # 2. duplicate items
    status |= sg.whole_units(status, units)
    alive = df[~df["item_id"].isin(status)]
    dups = sg.duplicate_units(alive, units) if units else sg.duplicate_items(alive)
    for i, kept_twin in dups.items():
        what = f"its unit {units[i]} equals the unit of" if i in units else "same question, options and media as"
        status[i] = ("duplicate_item", f"{what} {kept_twin}")
    member_dups = len(sg.duplicate_items(alive)) - len(dups) if units else 0
    alive = df[~df["item_id"].isin(status)]
    dup_opts = mcq.duplicate_stats(
        ((r["item_id"], list(r["options"])) for _, r in alive.iterrows() if sg.is_mcq(r)),
        gcfg.duplicate_option_threshold,
    )

    # 3. blind solvability (text only, through the engine: cached, logged to llm_calls)
    bc = gcfg.blind
    scores: dict[str, sg.BlindScore] = {}
    blind_backend = blind_model = blind_hash = None
    engine = None
    mcq_alive = alive[alive.apply(sg.is_mcq, axis=1)] if len(alive) else alive
    blind_units = units if bc.unit == "pool" else {}
    if bc.enabled and len(mcq_alive):
        sel = mcq_alive.sort_values("item_id")
        if bc.max_items:
            sel = sel.head(bc.max_items)
        engine = engine_factory()
        reqs = sg.blind_requests(sel, load_prompt(BLIND_PROMPT), bc)
        results = engine.run(BLIND_STAGE, name, reqs)
        scores = sg.score_blind(sel, reqs, results, bc, blind_units)
        ok = [r for r in results if r.ok]
        first = ok[0] if ok else (results[0] if results else None)
        if first is not None:
            blind_backend, blind_model, blind_hash = first.backend, first.model, first.prompt_hash
        md["blind_cost"] = _blind_cost(engine, read_table(store, "llm_calls"), spec)
    md["guess_drop_probability"] = sg.guess_drop_table(mcq_alive, bc, blind_units) if bc.enabled else {}
    flagged = [s for s in scores.values() if s.flagged]
    blind_failed = sum(s.failed for s in scores.values())
    blind_sent = blind_failed + sum(s.trials for s in scores.values())
    blind_coverage = round(1 - blind_failed / blind_sent, 4) if blind_sent else 1.0
    # A stub "model" answers at random: its flags mean nothing, so they never drop an item.
    drop_blind = bc.action == BlindAction.DROP and blind_backend != "stub"
    if drop_blind:
        blind_drops = {
            s.item_id: (
                "blind_solvable",
                f"{s.correct}/{s.trials} correct without the image (chance {s.chance:.4g}, p={s.p_value:.4g})",
            )
            for s in flagged
        }
        status |= blind_drops
    kept = df[~df["item_id"].isin(status)].copy()

    # 4. correct-option positions per split (never for fixed-order options)
    before = sg.position_figures(kept, gcfg.position_tolerance)
    moved = 0
    if gcfg.rebalance_positions:
        kept, moved = sg.rebalance_positions(kept, gcfg.position_tolerance, seed=(cfg.get("seed", 0), name))
    after = sg.position_figures(kept, gcfg.position_tolerance)
    lb = sg.length_figure(kept)

    for item_id, (reason, detail) in sorted(status.items()):
        rej.add(item_id, reason, "GateReject", detail, related_id=dups.get(item_id))
    kept["blind_trials"] = kept["item_id"].map(lambda i: scores[i].trials if i in scores else None)
    kept["blind_correct"] = kept["item_id"].map(lambda i: scores[i].correct if i in scores else None)
    kept["blind_p_value"] = kept["item_id"].map(lambda i: scores[i].p_value if i in scores else None)
    res_rows = []
    resh = dict(zip(kept["item_id"], kept["reshuffled"]))
    for _, r in df.iterrows():
        s = scores.get(r["item_id"])
        st = status.get(r["item_id"])
        res_rows.append(
            {
                "benchmark": name,
                "item_id": r["item_id"],
                "split": r["split"],
                "category": r["category"],
                "status": "dropped" if st else "kept",
                "reason": st[0] if st else None,
                "detail": st[1] if st else None,
                "mcq": bool(sg.is_mcq(r)),
                "unit_id": units.get(r["item_id"]),
                "blind_trials": s.trials if s else None,
                "blind_correct": s.correct if s else None,
                "blind_chance": s.chance if s else None,
                "blind_p_value": s.p_value if s else None,
                "blind_flagged": s.flagged if s else None,
                "blind_model": blind_model if s else None,
                "blind_backend": blind_backend if s else None,
                "blind_prompt_hash": blind_hash if s else None,
                "reshuffled": bool(resh.get(r["item_id"], False)),
                "backend": r["backend"],
            }
        )
    results_df = pd.DataFrame(res_rows, columns=gr_cols)
    kept["benchmark"] = name

    # figures and checks
    reasons = results_df["reason"].value_counts().to_dict()
    acc_before = sg.blind_accuracy(list(scores.values()))
    acc_after = sg.blind_accuracy([s for i, s in scores.items() if i in set(kept["item_id"])])
    stub_n = sum(1 for r in kept.to_dict("records") if stub_made(r))
    per_split = kept["split"].value_counts().to_dict()
    n_units_flagged = len({units.get(s.item_id, s.item_id) if blind_units else s.item_id for s in flagged})
    md.update(
        {
            "items_in": len(df),
            "items_kept": len(kept),
            "items_dropped": len(status),
            "dropped_by_reason": reasons,
            "kept_per_split": {k: int(v) for k, v in per_split.items()},
            "blind_accuracy_before": acc_before,
            "blind_accuracy_after": acc_after,
            "blind_items": len(scores),
            "blind_flagged": len(flagged),
            "blind_units_flagged": n_units_flagged,
            "positions_reshuffled": moved,
            "blind_failed_calls": blind_failed,
            "blind_coverage": blind_coverage,
            "length_bias_share_longest": round(lb.share_longest, 4),
            "length_bias_excess": round(lb.excess, 4),
            "stub_items": stub_n,
        }
    )
    for k, v in per_split.items():
        md[f"split/{k}"] = int(v)
    pos_fail = [f for f in after if not f.passed]
    fig_json = [
        {
            "split": f.split,
            "k": f.k,
            "n": f.n,
            "max_deviation": f.max_deviation,
            "allowed": f.allowed,
            "counts": f.counts,
        }
        for f in after
    ]
    blind_note = (
        "blind solver ran on the stub backend: random answers, nothing dropped"
        if blind_backend == "stub"
        else "off (the benchmark's policy or config)"
        if not bc.enabled
        else "no multiple-choice items"
        if not scores
        else "report only: flagged units kept, figures are a text-only baseline"
        if bc.action == "report"
        else "flagged units dropped"
    )
    kept_ids = set(kept["item_id"])
    blind_md = {
        "items_tested": len(scores),
        "unit": str(bc.unit),
        "action": str(bc.action),
        "trials": bc.trials,
        "flagged_items": len(flagged),
        "flagged_units": n_units_flagged,
        "dropped": reasons.get("blind_solvable", 0),
        "accuracy_before": acc_before,
        "accuracy_after": acc_after,
        "alpha": bc.alpha,
        "min_accuracy": bc.min_accuracy,
        "guess_drop_probability": md["guess_drop_probability"],
        "model": blind_model or "",
        "backend": blind_backend or "",
        "note": blind_note,
        "failed_calls": blind_failed,
        "coverage": blind_coverage,
        "min_coverage": bc.min_coverage,
    }
    if "blind_cost" in md:
        blind_md["cost"] = md["blind_cost"]
    checks = [
        Check(
            "gate_position_balance",
            not pos_fail or not gcfg.rebalance_positions,
            "warn",
            {
                "max_deviation": max((f.max_deviation for f in after), default=0.0),
                "max_deviation_before": max((f.max_deviation for f in before), default=0.0),
                "tolerance": gcfg.position_tolerance,
                "reshuffled": moved,
                "option_policy": cfg.get("options"),
                "per_split": fig_json,
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
        # Report-only is the paper's policy: flagged units stay and the check passes with the figures.
        # An outage of the blind solver is not a pass: below the coverage floor the gate fails (error).
        Check(
            "gate_blind_solvability",
            blind_coverage >= bc.min_coverage
            and (
                not flagged or bc.action == "report" or (drop_blind and not any(s.item_id in kept_ids for s in flagged))
            ),
            "error" if blind_coverage < bc.min_coverage else "warn",
            blind_md,
        ),
        Check(
            "gate_duplicates",
            reasons.get("duplicate_item", 0) == 0 and dup_opts.items_with_duplicates == 0 and member_dups == 0,
            "warn",
            {
                "duplicate_items_dropped": reasons.get("duplicate_item", 0),
                "duplicate_members_kept": member_dups,  # equal items inside units that differ as a whole
                "items_with_duplicate_options": dup_opts.items_with_duplicates,
                "duplicate_option_rate": round(dup_opts.rate, 4),
                "examples": dup_opts.examples,
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
            },
        ),
        Check(
            "gate_stub_items",
            stub_n == 0,
            "warn",
            {
                "stub_items": stub_n,
                "kept_items": len(kept),
                "note": "the export refuses these unless force_stub" if stub_n else "none",
            },
        ),
    ]
    return GateOutcome(
        {"gated_items": kept.reindex(columns=gi_cols), "gate_results": results_df}, rej, md, checks, engine
    )


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
    md: dict[str, Any] = {"force_stub": force_stub}
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
            recipe_text = recipe_path.read_text() if recipe_path.exists() else "# (no recipe config file)\n"
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
                "recipe_config_name": _display_path(recipe_path),
                # which settings profile made the items (paper = the file's top level), with the
                # hash of the settings in effect under it
                "recipe_profiles": {
                    p: settings_hash(recipe_path, p) for p in profiles_of(gated.get("extra", pd.Series(dtype=str)))
                },
                "cost": cost,
                "gates": gates_fig,
                "failed_gates": failed,
                "extra_sections": list(spec.card_sections),
            }
            stage_cfg = json.loads(json.dumps({k: v for k, v in cfg.items()}, default=str))
            stage_cfg["export"] = dict(stage_cfg.get("export") or {}, force_stub=force_stub)
            stage_cfg["blind_prompt_hash"] = load_prompt(BLIND_PROMPT).hash
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
        bad_pos = [f for f in sg.position_figures(gated, gcfg.position_tolerance) if f.max_deviation > f.allowed]
        if bad_pos:
            out.append(
                "position balance: "
                + ", ".join(f"{f.split} deviates {f.max_deviation:.0%} (allowed {f.allowed:.0%})" for f in bad_pos)
            )
    tested = res[res["blind_trials"].notna()] if len(res) else res
    if len(tested) and gcfg.blind.trials:
        cov = float(tested["blind_trials"].sum()) / (len(tested) * gcfg.blind.trials)
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
