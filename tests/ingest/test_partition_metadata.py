"""A run over several batch partitions records each partition's own numbers (issue 21).

Dagster copies a run's result metadata onto every partition it covers; a single-run backfill
over three batches must still show each batch its own row count, rejects and picture."""

import dagster as dg
import pytest

from assets.ingest.trunk import clips, frames, sources, videos
from forge.storage import TableStore
from resources.ingest import IngestResource
from resources.storage import StorageResource

SOURCES_YAML = """
sources:
  - {name: imgs, type: folder, path: "${SAMPLE_CORPUS}/images", media: image, batch_size: 6}
"""


@pytest.fixture(scope="module")
def backfill(corpus, tmp_path_factory):
    root = tmp_path_factory.mktemp("partition_md")
    (root / "sources.yaml").write_text(SOURCES_YAML)
    resources = {
        "storage": StorageResource(data_dir=str(root / "data")),
        "ingest": IngestResource(
            sources_path=str(root / "sources.yaml"),
            variables={"SAMPLE_CORPUS": str(corpus.root)},
            allowed_roots=[str(corpus.root)],
        ),
    }
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize([sources], instance=instance, resources=resources).success
    keys = instance.get_dynamic_partitions("batches")
    assert len(keys) >= 2
    result = dg.materialize(
        [sources, videos, clips, frames],
        selection=[videos, clips, frames],
        instance=instance,
        resources=resources,
        tags={"dagster/asset_partition_range_start": keys[0], "dagster/asset_partition_range_end": keys[-1]},
    )
    assert result.success
    return instance, keys, TableStore(root / "data")


def _events(instance, asset):
    records = instance.fetch_materializations(dg.AssetKey(asset), limit=100).records
    return {r.asset_materialization.partition: r.asset_materialization.metadata for r in records}


def test_each_partition_records_its_own_row_count_and_rejects(backfill):
    instance, keys, store = backfill
    events = _events(instance, "frames")
    assert sorted(events) == sorted(keys)  # one run, one event per batch
    true_rows = {k: len(store.read("frames", parts=[k])) for k in keys}
    assert len(set(true_rows.values())) > 1, "the corpus must give batches different sizes"
    assert {k: md["dagster/row_count"].value for k, md in events.items()} == true_rows
    rejects = store.read("rejects")
    rejects = rejects[rejects["stage"] == "frames"] if len(rejects) else rejects
    true_rejects = {k: int((rejects["partition"] == k).sum()) for k in keys} if len(rejects) else {}
    assert {k: md["rejects"].value for k, md in events.items()} == {k: true_rejects.get(k, 0) for k in keys}
    for k, md in events.items():  # run totals keep their own names, the same on every event
        assert md["run_total_rows"].value == sum(true_rows.values())
        assert md["run_partitions"].value == len(keys)
        kinds = md["frames_by_kind"].value
        assert sum(kinds.values()) == true_rows[k]


def test_each_partition_has_its_own_contact_sheet(backfill):
    instance, keys, _ = backfill
    sheets = {k: md["contact_sheet"].value for k, md in _events(instance, "frames").items()}
    assert all(s.startswith(f"![frames of {k}](data:image/png;base64,") for k, s in sheets.items())
    assert len(set(sheets.values())) == len(keys)
    assert all(len(s) < 200_000 for s in sheets.values())  # ≤ 150 KB of PNG, base64-encoded


def test_run_wide_counters_are_renamed_not_copied(backfill):
    instance, _, _ = backfill
    md = next(iter(_events(instance, "videos").values()))
    # reuse counters describe the whole run: under run_ names, never as one batch's numbers
    assert {"run_computed", "run_reused"} <= set(md) and not {"computed", "reused"} & set(md)
