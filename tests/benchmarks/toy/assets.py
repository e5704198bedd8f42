"""The toy recipe: ``toy_items`` asks the LLM for one question per image under
``<data>/toy_inbox/`` and publishes them under the toy's own contract."""

import time
from pathlib import Path

import dagster as dg
import pandas as pd
import yaml

from assets.common import contract_check_specs, publish, table_metadata
from assets.llm_support import record_llm_calls
from forge.llm.prompts import load_prompt
from forge.llm.types import ImageInput, LLMRequest
from forge.storage import RejectLog
from forge.storage.contracts import load_contract
from resources.llm import LLMResource
from resources.storage import StorageResource
from tests.benchmarks.toy.spec import HERE, SPEC

PROMPT = HERE / "prompts" / "generate.yaml"


@dg.asset(
    name="toy_items",
    group_name=SPEC.group,
    kinds={"openai"},
    check_specs=contract_check_specs("toy_items", ["toy_items"]),
    metadata=table_metadata(["toy_items"]),
    description="Toy items: one LLM-written question per image of the toy inbox.",
)
def toy_items(context: dg.AssetExecutionContext, storage: StorageResource, llm: LLMResource) -> dg.MaterializeResult:
    t0 = time.perf_counter()
    store = storage.store
    cfg = yaml.safe_load(SPEC.recipe_config_path().read_text())
    images = sorted((store.data_dir / cfg["images_dir"]).glob("*.png"))
    prompt = load_prompt(PROMPT)
    engine = llm.engine()
    reqs = [
        LLMRequest(item_id=p.stem, prompt=prompt, variables={"name": p.stem}, images=[ImageInput(path=p)])
        for p in images
    ]
    rej = RejectLog("toy_items", "all")
    rows = []
    for p, res in zip(images, engine.run("toy_items", "all", reqs), strict=True):
        if not res.ok:
            rej.add(p.stem, "llm_failed", res.error_class or "Error", res.error or "")
            continue
        rel = str(Path(p).relative_to(store.data_dir))
        rows.append(
            {
                "item_id": f"toy_{p.stem}",
                "benchmark": "toy",
                "task": "mcq",
                "category": res.data["category"],
                "question": res.data["question"],
                "options": res.data["options"],
                "option_types": None,
                "answer": res.data["answer"],
                "references": None,
                "media_paths": [rel],
                "unit_id": p.stem,
                "source_item_id": p.stem,
                "source": "toy",
                "channel": None,
                "batch": "all",
                "labels": None,
                "backend": res.backend,
                "model": res.model,
                "prompt_hash": res.prompt_hash,
                "extra": None,
            }
        )
    record_llm_calls(store, engine)
    frame = load_contract("toy_items").conform(pd.DataFrame(rows))
    return publish(store, {"toy_items": {"all": frame}}, rejects=[rej], asset_key=context.asset_key, started=t0)


defs = dg.Definitions(assets=[toy_items])
