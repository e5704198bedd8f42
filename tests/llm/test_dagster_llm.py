"""An LLM asset in Dagster: engine from the resource, llm_calls written, metadata, outdated-prompt check."""

from __future__ import annotations

import dagster as dg
import pandas as pd
import pytest

from assets.llm_support import outdated_prompt_check, record_llm_calls
from forge.llm import LLMRequest, load_prompt
from forge.llm.stub import StubOutputError, ensure_no_stub
from forge.storage import TableStore
from resources.llm import LLMResource
from resources.storage import StorageResource


def test_llm_asset_records_calls_and_check_sees_prompt_edits(tmp_path, prompt_dir):
    data = tmp_path / "data"
    qa_path = prompt_dir / "qa.yaml"

    @dg.asset(name="demo_llm")
    def demo_llm(llm: LLMResource, storage: StorageResource) -> dg.MaterializeResult:
        qa = load_prompt(qa_path)
        engine = llm.engine()
        res = engine.run(
            "demo_llm", "b-0001", [LLMRequest(item_id=f"i{i}", prompt=qa, variables={"text": str(i)}) for i in range(3)]
        )
        df = pd.DataFrame(
            [
                {"item_id": r.item_id, "prompt_name": r.prompt_name, "prompt_hash": r.prompt_hash, "backend": r.backend}
                for r in res
            ]
        )
        storage.store.write("demo_llm", df)
        return dg.MaterializeResult(metadata=record_llm_calls(storage.store, engine))

    check = outdated_prompt_check("demo_llm", "demo_llm", [qa_path])
    resources = {
        "llm": LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")),
        "storage": StorageResource(data_dir=str(data)),
    }
    result = dg.materialize([demo_llm, check], resources=resources)
    assert result.success
    md = result.asset_materializations_for_node("demo_llm")[0].metadata
    assert md["llm_backend"].value == "stub" and md["llm_calls"].value == 3 and "llm_warning" in md
    ledger = TableStore(data).read("llm_ledger")  # the spend ledger's snapshot table: 3 stub calls at $0
    assert len(ledger) == 3 and set(ledger["kind"]) == {"call"} and ledger["cost_usd"].sum() == 0
    [ev] = result.get_asset_check_evaluations()
    assert ev.passed and ev.metadata["outdated_rows"].value == 0
    calls = TableStore(data).read("llm_calls")
    assert len(calls) == 3 and set(calls["partition"]) == {"b-0001"}

    qa_path.write_text(qa_path.read_text().replace("one question", "one sharp question"))
    result = dg.materialize([check], resources=resources, selection=dg.AssetSelection.checks(check))
    [ev] = result.get_asset_check_evaluations()
    assert not ev.passed and ev.metadata["outdated_rows"].value == 3

    with pytest.raises(StubOutputError):
        ensure_no_stub(TableStore(data).read("demo_llm"))
