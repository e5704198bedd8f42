"""Unchanged stages are skipped (forge/storage/stage_cache.py): a re-run with the same inputs,
weights and settings reuses every result; a changed OCR threshold re-reads no image; a changed
image is the only one recomputed; ``reuse: false`` recomputes everything."""

import dagster as dg
import pandas as pd
import pytest
from PIL import Image

from assets.ingest.filters import duplicates, frame_hashes, text_ratio
from assets.ingest.trunk import clips, frames, sources, videos
from forge.storage import TableStore
from forge.storage.stage_cache import StageCache
from resources.ingest import IngestResource
from resources.storage import StorageResource
from tests.filters.conftest import media, ocr_resource  # noqa: F401 - fixtures
from tests.filters.test_assets import BATCHES, pipeline  # noqa: F401 - fixture
from tests.ingest.conftest import corpus, server  # noqa: F401 - fixtures
from tests.ingest.test_assets import FAST, SOURCES_YAML

pytestmark = pytest.mark.slow


def _reuse(result) -> tuple[int, int]:
    md = result.get_asset_materialization_events()[0].materialization.metadata
    return md["reused"].value, md["computed"].value


def _each_batch(asset, instance, resources, run_config=None) -> tuple[int, int]:
    reused = computed = 0
    for b in BATCHES:
        res = dg.materialize([asset], partition_key=b, instance=instance, resources=resources, run_config=run_config)
        assert res.success
        r, c = _reuse(res)
        reused, computed = reused + r, computed + c
    return reused, computed


def _same(a: pd.DataFrame, b: pd.DataFrame, key: str) -> bool:
    return a.sort_values(key).reset_index(drop=True).equals(b.sort_values(key).reset_index(drop=True))


def test_hashes_and_ocr_are_reused_and_a_threshold_change_reads_no_image(pipeline):
    store, instance, resources = pipeline
    assert _each_batch(frame_hashes, instance, resources) == (0, 11)  # 11 frames (one truncated: retried)
    hashes = store.read("frame_hashes")
    assert _each_batch(frame_hashes, instance, resources) == (10, 1)  # the undecodable one is not cached
    assert _same(store.read("frame_hashes"), hashes, "frame_id")
    assert dg.materialize([duplicates], instance=instance, resources=resources).success

    assert _each_batch(text_ratio, instance, resources) == (0, 6)
    first = store.read("text_ratio")
    assert _each_batch(text_ratio, instance, resources) == (6, 0)
    assert _same(store.read("text_ratio"), first, "frame_id")

    loose = {"ops": {"text_ratio": {"config": {"max_ratio": 0.9}}}}
    assert _each_batch(text_ratio, instance, resources, loose) == (6, 0)  # the threshold is applied after OCR
    t = store.read("text_ratio").set_index("frame_id")
    assert t.at["img_heavy", "passes"] and (t["max_ratio"] == 0.9).all()
    assert t["ratio"].to_dict() == first.set_index("frame_id")["ratio"].to_dict()

    # a changed image is the one frame read again; reuse off reads them all
    path = store.data_dir / store.read("frames").set_index("frame_id").at["img_hopper", "path"]
    Image.new("RGB", (200, 120), "white").save(path, format=Image.open(path).format)
    assert _each_batch(text_ratio, instance, resources) == (5, 1)
    off = dg.materialize(
        [text_ratio],
        partition_key=BATCHES[1],
        instance=instance,
        resources=resources,
        run_config={"ops": {"text_ratio": {"config": {"reuse": False}}}},
    )
    assert off.get_asset_materialization_events()[0].materialization.metadata["reuse"].value == "off"


def test_media_trunk_rerun_reuses_every_batch(corpus, server, tmp_path):
    (tmp_path / "sources.yaml").write_text(SOURCES_YAML)
    store = TableStore(tmp_path / "data")
    resources = {
        "storage": StorageResource(data_dir=str(store.data_dir)),
        "ingest": IngestResource(
            sources_path=str(tmp_path / "sources.yaml"),
            socket_timeout_s=5,
            retries=1,
            variables={"SAMPLE_CORPUS": str(corpus.root), "SAMPLE_SERVER": server.url},
            allowed_roots=[str(corpus.root)],  # the ingest policy confines local paths and refuses loopback
            allowed_hosts=["127.0.0.1"],
        ),
    }
    instance = dg.DagsterInstance.ephemeral()

    def build() -> dict[str, tuple[int, int]]:
        assert dg.materialize([sources], instance=instance, resources=resources).success
        out = {}
        for key in instance.get_dynamic_partitions("batches"):
            res = dg.materialize(
                [sources, videos, clips, frames],
                selection=[videos, clips, frames],
                partition_key=key,
                instance=instance,
                resources=resources,
                run_config={"ops": FAST},
            )
            assert res.success
            for ev in res.get_asset_materialization_events():
                md = ev.materialization.metadata
                r, c = out.get(ev.asset_key.path[-1], (0, 0))
                out[ev.asset_key.path[-1]] = (r + md["reused"].value, c + md["computed"].value)
        return out

    first = build()
    tables = {t: store.read(t) for t in ("videos", "clips", "frames")}
    rejects = store.read("rejects")
    assert all(r == 0 for r, _ in first.values())
    second = build()
    assert second == {a: (c, 0) for a, (_, c) in first.items()}  # every batch reused, nothing computed
    for t, df in tables.items():
        assert _same(store.read(t), df, {"videos": "video_id", "clips": "clip_id", "frames": "frame_id"}[t]), t
    kept = ["stage", "partition", "item_id", "reason"]
    assert _same(store.read("rejects")[kept], rejects[kept], "item_id")  # the same rejects, not duplicated

    # a frame file that vanished makes its batch recompute (and restores the file)
    gone = store.data_dir / tables["frames"]["path"].iloc[0]
    gone.unlink()
    third = build()
    assert third["frames"][1] == 1 and gone.is_file()


def test_cache_digests_files_once_and_misses_on_a_missing_file(tmp_path):
    cache = StageCache(tmp_path / "cache")
    f = tmp_path / "a.bin"
    f.write_bytes(b"x" * 100)
    d = cache.file_digest(f)
    assert d == cache.file_digest(f)
    f.write_bytes(b"y" * 101)
    assert cache.file_digest(f) != d
    cache.put_frames("s", "k", {"rows": pd.DataFrame({"path": ["a.bin"]}), "rejects": pd.DataFrame()})
    assert cache.get_frames("s", "k", tmp_path, ["path"]) is not None
    f.unlink()
    assert cache.get_frames("s", "k", tmp_path, ["path"]) is None
    assert cache.summary()["s"] == {"reused": 1, "computed": 1}
