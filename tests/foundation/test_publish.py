"""``publish`` refuses rows that break their contract: the step fails, nothing is written."""

import dagster as dg
import pandas as pd
import pytest

from assets.common import ContractViolation, publish
from forge.storage import RejectLog, TableStore


def _rej(item="x"):
    log = RejectLog("s", "p")
    log.add(item, "why")
    return log


def test_publish_refuses_contract_violations(tmp_path):
    store = TableStore(tmp_path / "data")
    good = pd.DataFrame(
        [
            {
                "stage": "s",
                "partition": "p",
                "item_id": "a",
                "reason": "r",
                "error_class": "",
                "detail": "",
                "related_id": None,
                "rejected_at": pd.Timestamp.now(tz="UTC"),
            }
        ]
    )
    publish(store, {"rejects": {"p": good}})
    assert len(store.read("rejects")) == 1
    bad = good.assign(item_id=[None])  # item_id is not nullable
    with pytest.raises(ContractViolation) as exc:
        publish(store, {"rejects": {"p": bad}}, rejects=[_rej()])
    assert "item_id" in str(exc.value.description) and exc.value.violations
    assert list(store.read("rejects")["item_id"]) == ["a"]  # the previous file stays, no reject written either


def test_a_violating_asset_fails_its_step(tmp_path):
    store = TableStore(tmp_path / "data")

    @dg.asset
    def writes_bad() -> dg.MaterializeResult:
        return publish(store, {"rejects": {"p": pd.DataFrame([{"stage": "s", "partition": "p", "item_id": "a"}])}})

    res = dg.materialize([writes_bad], raise_on_error=False)
    assert not res.success
    assert not store.exists("rejects")
