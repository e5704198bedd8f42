"""II-Bench asset checks: outdated prompts, filter / failure rates, and the shared MCQ checks."""

from __future__ import annotations

import dagster as dg
import pandas as pd

from assets.llm_support import outdated_prompt_check
from assets.recipes.mcq_checks import mcq_asset_checks
from resources.storage import StorageResource

from .assets import P_IMPLICATION, P_JUDGE, P_LABELS, P_QUESTIONS
from .logic import items as it

implication_prompt_current = outdated_prompt_check(
    "iibench_implication", "iibench_implication", [P_IMPLICATION], only={"origin": "llm"}
)


@dg.asset_check(
    asset="iibench_implication",
    name="implication_filter_rate",
    blocking=False,
    description="Share of screened images the implication filter keeps; warns when it keeps none "
    "(the paper's three filters removed >90 % of raw images, so a low rate is normal).",
)
def implication_filter_rate(storage: StorageResource) -> dg.AssetCheckResult:
    store = storage.store
    df = (
        store.read("iibench_implication")
        if store.exists("iibench_implication")
        else pd.DataFrame(columns=["keep", "origin"])
    )
    n = len(df)
    kept = int(df["keep"].astype(bool).sum()) if n else 0
    by_origin = df.groupby("origin")["keep"].agg(["count", "sum"]).astype(int).to_dict("index") if n else {}
    return dg.AssetCheckResult(
        passed=n == 0 or kept > 0,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "screened": n,
            "kept": kept,
            "keep_rate": round(kept / n, 4) if n else 0.0,
            "by_origin": dg.MetadataValue.json(by_origin),
        },
    )


@dg.asset_check(
    asset="iibench_items",
    name="distractor_failure_rate",
    blocking=False,
    description="Questions rejected by the distractor checks (also correct, implausible, duplicate "
    "options, unsupported answer) as a share of all questions written; warns above 50 %.",
)
def distractor_failure_rate(storage: StorageResource) -> dg.AssetCheckResult:
    store = storage.store
    rej = (
        store.read("rejects", where="stage = 'iibench_items'")
        if store.exists("rejects")
        else pd.DataFrame(columns=["reason", "error_class"])
    )
    items = store.read("iibench_items", columns=["item_id"]) if store.exists("iibench_items") else pd.DataFrame()
    qrej = rej[rej["error_class"] == "QuestionReject"] if len(rej) else rej
    total = len(items) + len(qrej)
    codes = (it.ALSO_CORRECT, it.IMPLAUSIBLE, it.DUPLICATE_OPTIONS, it.ANSWER_UNSUPPORTED, it.BAD_OPTIONS)
    by = {c: int((qrej["reason"] == c).sum()) for c in codes} if len(qrej) else {c: 0 for c in codes}
    rate = sum(by.values()) / total if total else 0.0
    return dg.AssetCheckResult(
        passed=rate <= 0.5,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "questions": total,
            "accepted": len(items),
            "failure_rate": round(rate, 4),
            "by_reason": dg.MetadataValue.json(by),
        },
    )


CHECKS = [
    implication_prompt_current,
    implication_filter_rate,
    distractor_failure_rate,
    outdated_prompt_check("iibench_labels", "iibench_labels", [P_LABELS]),
    outdated_prompt_check("iibench_items", "iibench_items", [P_QUESTIONS, P_JUDGE]),
    *mcq_asset_checks("iibench_items"),
]
