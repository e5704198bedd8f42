"""VAGUE asset checks: the paper's rules re-verified on kept rows, with failure rates.

Each ``*_rules`` check (WARN) recounts, on the stored rows, the invariant its stage
enforces (object ∈ the frame's objects; the indirect expression conceals action and
object; the NE object is absent from the frame) and reports in metadata the share of
attempted frames rejected per reason (from the ``rejects`` table). Prompt checks flag rows
made with an older prompt file; ``mcq_checks`` cover option position, length and
duplicates of ``vague_items``.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import dagster as dg
import pandas as pd

from assets.llm_support import outdated_prompt_check
from assets.recipes.mcq_checks import mcq_asset_checks
from forge.llm.stub import advisory
from forge.storage import TableStore
from resources.storage import StorageResource

from .assets import PROMPT_FILES
from .logic import lexicon, logic


def failure_rates(store: TableStore, stage: str, kept: int) -> dict[str, object]:
    """Rejects of ``stage`` by reason, and their share of the frames the stage attempted."""
    rej = store.read("rejects", where="stage = ?", params=[stage]) if store.exists("rejects") else pd.DataFrame()
    n_rej = len(rej)
    attempted = kept + n_rej
    by = rej["reason"].value_counts().to_dict() if n_rej else {}
    return {
        "attempted": attempted,
        "kept": kept,
        "rejected": n_rej,
        "failure_rate": round(n_rej / attempted, 4) if attempted else 0.0,
        "failure_rate_by_reason": dg.MetadataValue.json({k: round(v / attempted, 4) for k, v in by.items()}),
        "rejects_by_reason": dg.MetadataValue.json(by),
    }


def _rules_check(
    asset: str, description: str, violations: Callable[[TableStore, pd.DataFrame], list[str]]
) -> dg.AssetChecksDefinition:
    @dg.asset_check(asset=dg.AssetKey(asset), name=f"{asset}_rules", blocking=False, description=description)
    def _check(storage: StorageResource) -> dg.AssetCheckResult:
        store = storage.store
        df = store.read(asset) if store.exists(asset) else pd.DataFrame()
        # stub rows kept their placeholder verdicts as advisory notes: the rules apply to real rows only
        stub = df["backend"].map(advisory) if len(df) and "backend" in df else pd.Series(False, index=df.index)
        bad = violations(store, df[~stub]) if len(df[~stub]) else []
        return dg.AssetCheckResult(
            passed=not bad,
            severity=dg.AssetCheckSeverity.WARN,
            metadata={
                "violations": len(bad),
                "examples": dg.MetadataValue.json(bad[:10]),
                "stub_rows_not_checked": int(stub.sum()),
                # a row the judge dropped stays for the people (judge_keep false): its reject counts it
                **failure_rates(
                    store,
                    asset,
                    int(df["judge_keep"].fillna(True).astype(bool).sum()) if "judge_keep" in df else len(df),
                ),
            },
        )

    return _check


def _candidates(store: TableStore) -> pd.DataFrame:
    c = store.read("vague_candidates") if store.exists("vague_candidates") else pd.DataFrame()
    return c.set_index("frame_id") if len(c) else pd.DataFrame()


def direct_violations(store: TableStore, df: pd.DataFrame) -> list[str]:
    c = _candidates(store)
    out = []
    for r in df.itertuples(index=False):
        objs = list(c.loc[r.frame_id, "objects"]) if r.frame_id in c.index else []
        if logic.match_object(r.object, objs) is None:
            out.append(f"{r.frame_id}: object {r.object!r} not among the frame's objects")
    return out


def indirect_violations(store: TableStore, df: pd.DataFrame) -> list[str]:
    d = store.read("vague_direct") if store.exists("vague_direct") else pd.DataFrame()
    d = d.set_index("frame_id") if len(d) else d
    out = []
    for r in df.itertuples(index=False):
        if r.frame_id in d.index:
            named = lexicon.mentions(r.indirect_expression, d.loc[r.frame_id, "action"]) + lexicon.mentions(
                r.indirect_expression, d.loc[r.frame_id, "object"]
            )
            if named:
                out.append(f"{r.frame_id}: indirect expression names {named}")
        if not json.loads(r.ambiguity_report).get("ok", False):
            out.append(f"{r.frame_id}: stored ambiguity report is not ok")
    return out


def options_violations(store: TableStore, df: pd.DataFrame) -> list[str]:
    c = _candidates(store)
    out = []
    for r in df[df["option_type"] == "NE"].itertuples(index=False):
        present = list(c.loc[r.frame_id, "present_objects"]) if r.frame_id in c.index else []
        hits = [
            p
            for p in present
            if set(lexicon.content_lemmas(p)) & set(lexicon.content_lemmas(r.substitute_object or ""))
        ]
        if hits:
            out.append(f"{r.frame_id}: NE object {r.substitute_object!r} is present ({hits})")
    counts = df.groupby("frame_id")["option_type"].nunique()
    out += [f"{f}: {n} option types, expected 4" for f, n in counts.items() if n != 4]
    return out


def _hash_check(asset: str, column: str, prompt_key: str) -> dg.AssetChecksDefinition:
    return outdated_prompt_check(
        asset, asset, [PROMPT_FILES[prompt_key]], name=f"prompt_current_{asset}_{column}", column=column
    )


CHECKS = [
    _rules_check(
        "vague_candidates",
        "Candidate selection: failure rates per reason (too few persons/tags, "
        "neighbouring frame, blurry, no vocabulary, batch cap).",
        lambda s, d: [],
    ),
    _rules_check(
        "vague_direct",
        "Object of every kept triple is one of the frame's extracted objects; "
        "failure rates (object_not_in_tags, low_direct_rating, ...).",
        direct_violations,
    ),
    _rules_check(
        "vague_indirect",
        "Kept indirect expressions name neither the action nor the key object; "
        "failure rates (indirect_not_ambiguous, low_indirect_rating, ...).",
        indirect_violations,
    ),
    _rules_check(
        "vague_options",
        "NE objects are absent from the frame's tags and detections, 4 option types "
        "per frame; failure rates (ne_object_present, ...).",
        options_violations,
    ),
    _rules_check("vague_items", "Item build failure rates (duplicate_options, missing_options).", lambda s, d: []),
    outdated_prompt_check("vague_direct", "vague_direct", [PROMPT_FILES["direct"]]),
    _hash_check("vague_direct", "judge_prompt_hash", "rate_direct"),
    outdated_prompt_check("vague_indirect", "vague_indirect", [PROMPT_FILES["indirect"]]),
    _hash_check("vague_indirect", "select_prompt_hash", "select_indirect"),
    outdated_prompt_check("vague_options", "vague_options", list(PROMPT_FILES.values())),
    # NE options differ from the correct one by the object only (§4.2.3): flag exact duplicates.
    *mcq_asset_checks("vague_items", duplicate_threshold=1.0),
]
