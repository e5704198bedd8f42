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


def test_a_run_over_several_partitions_records_each_partitions_own_numbers(tmp_path):
    """One run over three partitions: row counts, rejects, counters and previews per partition,
    the run's totals under run_ names (issue 21: 49 rows claimed for each of five batches)."""
    from assets.common import StageRun, stage_check_specs
    from resources.storage import StorageResource

    sizes, rejected = {"a": 1, "b": 3, "c": 0}, {"a": 0, "b": 1, "c": 2}

    @dg.asset(
        name="sources",
        partitions_def=dg.StaticPartitionsDefinition(list(sizes)),
        backfill_policy=dg.BackfillPolicy.single_run(),
        check_specs=stage_check_specs("sources", ["sources"]),
    )
    def stage(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
        run = StageRun(context, storage)
        for part, log in run.partitions():
            run.put(
                part,
                [
                    {
                        "source": f"{part}{i}",
                        "type": "folder",
                        "license_policy": "any",
                        "batch_size": 1,
                        "spec": "{}",
                        "items": 1,
                        "rejected": 0,
                        "batches": 1,
                        "sources_file": "s.yaml",
                        "listed_at": pd.Timestamp.now(tz="UTC"),
                    }
                    for i in range(sizes[part])
                ],
            )
            for i in range(rejected[part]):
                log.add(f"{part}-bad{i}", "unreadable")
        return run.publish({**run.describe(lambda df: {"folders": int((df["type"] == "folder").sum())}), "note": "x"})

    instance = dg.DagsterInstance.ephemeral()
    res = dg.materialize(
        [stage],
        instance=instance,
        resources={"storage": StorageResource(data_dir=str(tmp_path / "data"))},
        tags={"dagster/asset_partition_range_start": "a", "dagster/asset_partition_range_end": "c"},
    )
    assert res.success
    events = {m.partition: m.metadata for m in res.asset_materializations_for_node("sources")}
    assert {k: md["dagster/row_count"].value for k, md in events.items()} == sizes
    assert {k: md["rejects"].value for k, md in events.items()} == rejected
    assert {k: md["folders"].value for k, md in events.items()} == sizes
    previews = {k: [r.data for r in md["preview"].value.records] for k, md in events.items()}
    assert previews["c"] == [] and any("b2" in str(v) for r in previews["b"] for v in r.values())
    assert events["b"]["rejects_by_reason"].value == {"unreadable": 1}
    for md in events.values():
        assert md["run_total_rows"].value == 4 and md["run_rejects"].value == 3 and md["run_partitions"].value == 3
        assert md["note"].value == "x"  # text that is true of the whole run keeps its name
    stored = instance.fetch_materializations(dg.AssetKey("sources"), limit=10).records
    assert sorted(r.asset_materialization.metadata["dagster/row_count"].value for r in stored) == [0, 1, 3]
