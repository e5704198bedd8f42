"""Hummus asset checks: outdated prompts, and the rates of annotation failures by kind."""

import dagster as dg
import pandas as pd

from assets.llm_support import outdated_prompt_check
from resources.storage import StorageResource

from .assets import P_ANNOTATE, P_CAPTION
from .logic import annotations as A

FAILURE_CODES = (
    A.INVALID_SPAN,
    A.BOX_OUT_OF_BOUNDS,
    A.BAD_METAPHOR,
    A.EXPLANATION_TOO_LONG,
    A.MISSING_FIELD,
    A.UNKNOWN_DEVICE,
    A.BAD_VERDICT,
)


@dg.asset_check(
    asset="hummus_annotations",
    name="annotation_failure_rates",
    blocking=False,
    description="Pairs rejected, or kept verdict-only, by the code checks (invalid span, box out of bounds, "
    "bad metaphor format, explanation too long...) as shares of all annotated pairs; warns above 30 %.",
)
def annotation_failure_rates(storage: StorageResource) -> dg.AssetCheckResult:
    store = storage.store
    rej = (
        store.read("rejects", where="stage = 'hummus_annotations'")
        if store.exists("rejects")
        else pd.DataFrame(columns=["reason"])
    )
    ann = (
        store.read("hummus_annotations", columns=["annotation_id", "detail_reject"])
        if store.exists("hummus_annotations")
        else pd.DataFrame(columns=["annotation_id", "detail_reject"])
    )
    n_ok = len(ann)
    total = n_ok + len(rej)
    # a failure is a rejected pair or a verdict-only row (its detailed annotation failed)
    codes = pd.concat([rej["reason"].astype(object), ann["detail_reject"].dropna().astype(object)])
    by = {c: int((codes == c).sum()) for c in FAILURE_CODES}
    rates = {c: round(v / total, 4) if total else 0.0 for c, v in by.items()}
    failed = sum(by.values())
    return dg.AssetCheckResult(
        passed=not total or failed / total <= 0.3,
        severity=dg.AssetCheckSeverity.WARN,
        metadata={
            "pairs": total,
            "annotated": n_ok,
            "verdict_only": int(ann["detail_reject"].notna().sum()),
            "failure_rate": round(failed / total, 4) if total else 0.0,
            "rates": dg.MetadataValue.json(rates),
        },
    )


# Table captions have no prompt and never count; only LLM-written ones can be outdated.
caption_prompt_current = outdated_prompt_check(
    "hummus_pairs", "hummus_pairs", [P_CAPTION], name="prompt_current_hummus_pairs", only={"caption_origin": "llm"}
)


CHECKS = [
    caption_prompt_current,
    annotation_failure_rates,
    outdated_prompt_check("hummus_annotations", "hummus_annotations", [P_ANNOTATE]),
    outdated_prompt_check("hummus_items", "hummus_items", [P_ANNOTATE]),
]
