"""Hummus asset checks: outdated prompts, and the rates of annotation failures by kind."""

import dagster as dg
import pandas as pd

from assets.llm_support import count_outdated, current_prompt_hashes, outdated_prompt_check
from assets.recipes.hummus.assets import P_ANNOTATE, P_CAPTION
from forge.recipes.hummus import annotations as A
from resources.storage import StorageResource

FAILURE_CODES = (A.INVALID_SPAN, A.BOX_OUT_OF_BOUNDS, A.BAD_METAPHOR, A.EXPLANATION_TOO_LONG, A.MISSING_FIELD,
                 A.UNKNOWN_DEVICE, A.BAD_VERDICT)


@dg.asset_check(asset="hummus_annotations", name="annotation_failure_rates", blocking=False,
                description="Pairs rejected by the code checks (invalid span, box out of bounds, bad metaphor "
                            "format, explanation too long...) as shares of all annotated pairs; warns above 30 %.")
def annotation_failure_rates(storage: StorageResource) -> dg.AssetCheckResult:
    store = storage.store
    rej = store.read("rejects", where="stage = 'hummus_annotations'") if store.exists("rejects") else pd.DataFrame(
        columns=["reason"])
    n_ok = len(store.read("hummus_annotations", columns=["annotation_id"])) if store.exists("hummus_annotations") else 0
    total = n_ok + len(rej)
    by = {c: int((rej["reason"] == c).sum()) for c in FAILURE_CODES} if len(rej) else {c: 0 for c in FAILURE_CODES}
    rates = {c: round(v / total, 4) if total else 0.0 for c, v in by.items()}
    failed = sum(by.values())
    return dg.AssetCheckResult(passed=not total or failed / total <= 0.3, severity=dg.AssetCheckSeverity.WARN,
                               metadata={"pairs": total, "annotated": n_ok, "failure_rate": round(failed / total, 4) if total else 0.0,
                                         "rates": dg.MetadataValue.json(rates)})


@dg.asset_check(asset="hummus_pairs", name="prompt_current_hummus_pairs", blocking=False,
                description="LLM-written captions (caption_origin llm) made with a caption prompt that has since "
                            "changed; table captions have no prompt and never count.")
def caption_prompt_current(storage: StorageResource) -> dg.AssetCheckResult:
    store = storage.store
    df = store.read("hummus_pairs") if store.exists("hummus_pairs") else pd.DataFrame(
        columns=["caption_origin", "prompt_hash"])
    llm_rows = df[df["caption_origin"] == "llm"][["prompt_hash"]]
    current = current_prompt_hashes([P_CAPTION])
    n, by = count_outdated(llm_rows, current)
    return dg.AssetCheckResult(passed=n == 0, severity=dg.AssetCheckSeverity.WARN,
                               metadata={"llm_captions": len(llm_rows), "outdated_rows": n,
                                         "llm_caption_share": round(len(llm_rows) / len(df), 4) if len(df) else 0.0,
                                         "current_hashes": dg.MetadataValue.json(current)})


CHECKS = [
    caption_prompt_current,
    annotation_failure_rates,
    outdated_prompt_check("hummus_annotations", "hummus_annotations", [P_ANNOTATE]),
    outdated_prompt_check("hummus_items", "hummus_items", [P_ANNOTATE]),
]
