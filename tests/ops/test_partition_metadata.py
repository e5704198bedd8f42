"""Every batch's figures are its own: in one run over several batches (the demo's single-run
backfill), each batch-partitioned asset's materialization of a batch carries that batch's row
count, compared here with the catalog; and every batch shows the run's rows per batch, so a
batch where a stage does not apply (an image batch for a video stage) hides none of the others."""

from pathlib import Path

import dagster as dg
import pytest
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from assets.common import batches
from assets.ingest.filters import frame_hashes
from assets.ingest.speech import transcripts
from assets.ingest.trunk import clips, frames, sources, videos
from forge.storage import TableStore
from resources.ingest import IngestResource
from resources.llm import LLMResource
from resources.storage import StorageResource

TRUNK = [videos, clips, transcripts, frames, frame_hashes]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from forge.media.sample_corpus import build_sample_corpus

    root = tmp_path_factory.mktemp("pm")
    corpus = build_sample_corpus(root / "data" / "sample_corpus")
    (root / "s.yaml").write_text(
        "sources:\n"
        f"  - {{name: vids, type: folder, path: '{corpus.root}/videos', media: video}}\n"
        f"  - {{name: imgs, type: folder, path: '{corpus.root}/images', media: image, batch_size: 5}}\n"
    )
    resources = {
        "storage": StorageResource(data_dir=str(root / "data")),
        "ingest": IngestResource(sources_path=str(root / "s.yaml")),
        "llm": LLMResource(backend="stub", cache_path=str(root / "c.sqlite")),
    }
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize([sources], instance=instance, resources=resources).success
    keys = instance.get_dynamic_partitions(batches.name)
    tags = {ASSET_PARTITION_RANGE_START_TAG: keys[0], ASSET_PARTITION_RANGE_END_TAG: keys[-1]}
    assert dg.materialize([sources, *TRUNK], selection=TRUNK, instance=instance, resources=resources, tags=tags).success
    return instance, TableStore(root / "data"), keys


def test_each_batch_carries_its_own_rows(built):
    instance, store, keys = built
    assert len(keys) >= 3  # video and image batches in one run
    for asset in TRUNK:
        name = asset.key.to_user_string()
        truth = store.query(f"select batch, count(*) n from {name} group by batch")
        truth = dict(zip(truth["batch"], truth["n"].astype(int), strict=True))
        for batch in keys:
            records = instance.fetch_materializations(
                dg.AssetRecordsFilter(asset_key=asset.key, asset_partitions=[batch]), limit=1
            ).records
            assert records, (name, batch)
            md = records[0].asset_materialization.metadata
            assert md["dagster/row_count"].value == truth.get(batch, 0), (name, batch)
            assert f"| {batch} | {truth.get(batch, 0)} |" in md["run_rows_by_batch"].value, (name, batch)


def test_transcripts_of_an_image_batch_say_nothing_was_said(built):
    instance, store, keys = built
    image_batch = next(k for k in keys if k.startswith("imgs"))
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=transcripts.key, asset_partitions=[image_batch]), limit=1
    ).records
    md = records[0].asset_materialization.metadata
    assert md["dagster/row_count"].value == 0 and md["transcript_sources"].value == {}
    assert Path(store.data_dir).is_dir()
