"""The gate stage of every benchmark, Dagster-free: field and duplicate gates, the text-only
probe, correct-option positions (``forge/gates/steps.py``), with one check per gate.

What differs between benchmarks comes from the spec: the option policy (fixed-order options are
never re-balanced), the blind policy (drop / report / off, per item or per pool), the unit that
a gate never splits.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec, BlindAction
from forge.gates import blind, steps
from forge.gates import checks as sg
from forge.gates.blind import Probe
from forge.gold.apply import gold_items
from forge.items.fields import imported_ids, is_mcq, normalise_items, unit_of
from forge.items.outcome import md_table
from forge.items.read import read_table
from forge.llm.prompts import load_prompt
from forge.llm.stub import stub_made
from forge.splits.config import GateConfig, StageSettings
from forge.storage import RejectLog, TableStore
from forge.storage.contracts import load_contract
from forge.storage.result import Check, Markdown, StageResult

BLIND_PROMPT = Path(__file__).resolve().parents[2] / "assets" / "splits" / "prompts" / "blind_solver.yaml"
BLIND_STAGE = "blind_solver"
FIELD_REASONS = ("empty_field", "contract_violation", "media_missing")


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
    store: TableStore, spec: BenchmarkSpec, settings: StageSettings, engine_factory: Callable[[], Any]
) -> StageResult:
    """Gate ``spec``'s split items (tables ``gated_items``, ``gate_results``, part ``spec.name``;
    ``engine``: the blind solver's, when it ran, whose calls are to be recorded). ``engine_factory`` makes the LLM engine of the blind probe
    (called only when the probe runs). Imported release items pass unchanged unless a
    ``gates.imported`` opt-in says otherwise (``forge/gates/steps.py``)."""
    gcfg = settings.gates
    name = spec.name
    rej = RejectLog(spec.asset("gated"), "all")
    items = gold_items(store, spec)
    sp = read_table(store, "splits", parts=[name])
    md: dict[str, Any] = {
        "options": settings.options,
        "blind_action": str(gcfg.blind.action),
        "blind_unit": str(gcfg.blind.unit),
    }
    if items.empty or sp.empty:
        return _no_gate_items(spec, items, md, rej)
    imported = imported_ids(items)
    df = normalise_items(items, name)
    df = df.merge(sp[["item_id", "split", "group_id"]], on="item_id", how="inner")
    md["items_without_split"] = int(len(items) - len(df))
    df["reshuffled"] = False
    units = unit_of(df, settings.unit_key)

    # 1–2. empty fields / contract / media, whole units, duplicate items
    fs = steps.field_and_duplicates(df, units, imported, gcfg, store.data_dir)
    status = fs.status
    # 3. the text-only probe (through the engine: cached, logged to llm_calls); it reports by default
    bc = gcfg.blind
    alive = df[~df["item_id"].isin(status)]
    mcq_alive = alive[alive.apply(is_mcq, axis=1)] if len(alive) else alive
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
    pos = steps.positions(df[~df["item_id"].isin(status)].copy(), imported, gcfg, (settings.seed, name))
    kept = steps.with_blind_columns(pos.kept, probe)

    for item_id, (reason, detail) in sorted(status.items()):
        rej.add(item_id, reason, "GateReject", detail, related_id=fs.dups.get(item_id))
    results_df = pd.DataFrame(
        steps.result_rows(name, df, status, probe, units, kept), columns=load_contract("gate_results").column_names
    )
    kept["benchmark"] = name
    md |= _gate_metadata(df, kept, results_df, probe, pos, gcfg, imported, fs)
    checks = _gate_checks(settings.options, gcfg, md, df, probe, pos, fs, imported)
    gated = kept.reindex(columns=load_contract("gated_items").column_names)
    return StageResult(
        {"gated_items": {name: gated}, "gate_results": {name: results_df}}, [rej], md, checks, engine=engine
    )


def _no_gate_items(spec: BenchmarkSpec, items: pd.DataFrame, md: dict[str, Any], rej: RejectLog) -> StageResult:
    md["note"] = (
        f"no items: `{spec.items_table}` is missing or empty"
        if items.empty
        else f"no splits for {spec.name}: materialize `{spec.asset('splits')}` first"
    )
    checks = [Check(c, True, "warn", {"items": 0, "note": md["note"]}) for c in GATE_CHECKS]
    empty = {
        t: {spec.name: pd.DataFrame(columns=load_contract(t).column_names)} for t in ("gated_items", "gate_results")
    }
    return StageResult(empty, [rej], md, checks)


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
    options: str | None,
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
                "option_policy": options,
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
