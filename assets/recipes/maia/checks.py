"""MAIA asset checks: rates in metadata, MAIA's published figures next to ours."""

from __future__ import annotations

from typing import Any

import dagster as dg
import pandas as pd

from assets.llm_support import outdated_prompt_check
from assets.recipes.mcq_checks import mcq_asset_checks
from forge.llm.stub import ADVISORY_NOTE, advisory
from resources.storage import StorageResource

from .assets import FOIL_PROMPTS, P, language, settings
from .logic import questions as Q


def _read(storage: StorageResource, table: str, where: str | None = None, params: list | None = None) -> pd.DataFrame:
    store = storage.store
    return store.read(table, where=where, params=params) if store.exists(table) else pd.DataFrame()


@dg.asset_check(
    asset="maia_questions",
    blocking=False,
    description="Questions are open-ended (no yes/no), audio-free, and the B question of a pair is about "
    "other entities/events (content-word overlap with A ≤ pair_max_overlap).",
)
def maia_questions_open_ended(storage: StorageResource) -> dg.AssetCheckResult:
    df = _read(storage, "maia_questions")
    n = len(df)
    lang = language()
    yes_no = int(df["question"].map(lambda q: Q.is_yes_no(q, lang)).sum()) if n else 0
    audio = int(df["question"].map(lambda q: Q.mentions_audio(q, lang)).sum()) if n else 0
    lim = float(settings()["questions"].get("pair_max_overlap", 0.5))
    same = int((df["pair_overlap"].fillna(0) > lim).sum() // 2) if n else 0
    return dg.AssetCheckResult(
        passed=yes_no == 0 and audio == 0 and same == 0,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "questions": n,
            "yes_no": yes_no,
            "audio_based": audio,
            "pairs_same_focus": same,
            "mean_pair_overlap": float(df["pair_overlap"].mean()) if n else 0.0,
        },
    )


def _pool_check(kind: str) -> dg.AssetChecksDefinition:
    asset = "maia_answer_pools" if kind == "answers" else "maia_statements"

    @dg.asset_check(
        asset=asset,
        name=f"maia_{kind}_lexical_diversity",
        blocking=False,
        description=f"Kept {kind} pools: exactly pool_size members, no equal strings, no pair above the overlap "
        "threshold; mean overlap and TTR (all tokens and content words) next to MAIA's figures.",
    )
    def _check(storage: StorageResource) -> dg.AssetCheckResult:
        st = _read(storage, "maia_pool_stats", where="kind = ?", params=[kind])
        kept = st[st["status"] == "kept"] if len(st) else st
        size = int(settings()["answers"]["pool_size"])
        # a kept pool is whole (exactly pool_size members) and diverse
        bad = (
            int(
                (
                    (kept["pairs_over_threshold_after"] > 0)
                    | (kept["equal_pairs_after"] > 0)
                    | (kept["n_final"] != size)
                ).sum()
            )
            if len(kept)
            else 0
        )
        md: dict[str, Any] = {
            "pools": len(st),
            "pools_kept": len(kept),
            "pool_reject_rate": round(1 - len(kept) / len(st), 4) if len(st) else 0.0,
            "pools_violating": bad,
        }
        if len(st):
            md["reject_reasons"] = dg.MetadataValue.json(st["reason"].dropna().value_counts().to_dict())
        if len(kept):
            for col in (
                "overlap_mean_before",
                "overlap_mean_after",
                "overlap_mean_cw_after",
                "ttr_after",
                "ttr_cw_after",
            ):
                md[col] = round(float(kept[col].mean()), 4)
            md["pools_ttr_cw_below_0_5"] = int((kept["ttr_cw_after"] < 0.5).sum())
            md["rephrased_members"] = int(kept["rephrased"].sum())
            if kind == "answers":
                md["inconsistent_rate"] = round(float(st["n_inconsistent"].sum() / max(st["n_initial"].sum(), 1)), 4)
                md["contradiction_rate"] = round(float(st["contradiction"].fillna(False).astype(bool).mean()), 4)
                if "contradiction_before_fix" in st:  # App. A.3's 9.75 % was measured before the fix
                    first = st["contradiction_before_fix"].fillna(False).astype(bool)
                    md["contradiction_rate_before_fix"] = round(float(first.mean()), 4)
        md["maia_reference"] = dg.MetadataValue.json(
            {k: v for k, v in settings().get("reference", {}).items() if k.startswith(kind)}
        )
        return dg.AssetCheckResult(passed=bad == 0, severity=dg.AssetCheckSeverity.WARN, metadata=md)

    return _check


@dg.asset_check(
    asset="maia_foils",
    blocking=False,
    description="NLI contradiction test (App. A.8): share of foils entailed by their statement — at the "
    "first generation and among the accepted foils (should be 0) — plus edit size.",
)
def maia_foil_entailment_rate(storage: StorageResource) -> dg.AssetCheckResult:
    foils = _read(storage, "maia_foils")
    att = _read(storage, "llm_attempts", where="stage = 'maia_foils'")
    nli_rows = att[att["step"] == "check:nli_contradiction"] if len(att) else att
    first = nli_rows[nli_rows["round"] == 0] if len(nli_rows) else nli_rows
    items_first = att[(att["step"] == "generate") & (att["round"] == 0) & att["ok"]] if len(att) else att
    first_rate = len(first[first["verdict"] == "major"]) / len(items_first) if len(items_first) else 0.0
    n = len(foils)
    final_ent = int((foils["nli_label"] == "entailment").sum()) if n else 0
    stub = bool(n and foils["backend"].map(advisory).all())
    md = {
        "foils": n,
        "entailment_rate_first_generation": round(first_rate, 4),
        "entailment_rate_accepted": round(final_ent / n, 4) if n else 0.0,
        "nli_labels": dg.MetadataValue.json(foils["nli_label"].fillna("none").value_counts().to_dict() if n else {}),
        "structural_invalid_accepted": int((~foils["structural_valid"].astype(bool)).sum()) if n else 0,
        "mean_edit_distance": round(float(foils["edit_distance"].mean()), 3) if n else 0.0,
        "mean_edit_ratio": round(float(foils["edit_ratio"].mean()), 4) if n else 0.0,
        "maia_reference_entailment_rate": settings().get("reference", {}).get("foil_entailment_rate"),
    }
    if stub:
        md["note"] = ADVISORY_NOTE
    return dg.AssetCheckResult(passed=stub or final_ent == 0, severity=dg.AssetCheckSeverity.WARN, metadata=md)


CHECKS = [
    maia_questions_open_ended,
    _pool_check("answers"),
    _pool_check("statements"),
    maia_foil_entailment_rate,
    outdated_prompt_check("maia_questions", "maia_questions", [P["questions"]]),
    outdated_prompt_check("maia_answer_pools", "maia_answer_pools", [P["answers"]]),
    outdated_prompt_check("maia_statements", "maia_statements", [P["statement"]]),
    outdated_prompt_check("maia_foils", "maia_foils", FOIL_PROMPTS),
    # statements and foils are near-identical by design: only exact duplicates count here
    *mcq_asset_checks("maia_items", duplicate_threshold=0.999),
]
