"""Materialize the ingest assets with Dagster's testing API on a temp data dir, an ephemeral
instance and real dynamic partitions, against the sample corpus and the loopback server."""

import dagster as dg
import pytest

from assets.ingest.trunk import clips, frames, sources, videos
from forge.storage import TableStore, open_catalog
from resources.ingest import IngestResource
from resources.storage import StorageResource

SOURCES_YAML = """
defaults: {batch_size: 50}
sources:
  - name: loopback
    type: urls
    urls: ["${SAMPLE_SERVER}/bikes.mp4", "${SAMPLE_SERVER}/watch/scenes.html", "${SAMPLE_SERVER}/gone.mp4"]
  - {name: local_videos, type: folder, path: "${SAMPLE_CORPUS}/videos", media: video}
  - {name: local_images, type: folder, path: "${SAMPLE_CORPUS}/images", media: image, batch_size: 8}
  - {name: captioned, type: table, path: "${SAMPLE_CORPUS}/table/captions.csv"}
"""
FAST = {"clips": {"config": {"clip_files": "copy"}}, "frames": {"config": {"frames_per_clip": 6}}}


@pytest.fixture(scope="module")
def built(corpus, server, tmp_path_factory):
    root = tmp_path_factory.mktemp("ingest_assets")
    (root / "sources.yaml").write_text(SOURCES_YAML)
    resources = {
        "storage": StorageResource(data_dir=str(root / "data")),
        "ingest": IngestResource(
            sources_path=str(root / "sources.yaml"),
            socket_timeout_s=5,
            retries=1,
            variables={"SAMPLE_CORPUS": str(corpus.root), "SAMPLE_SERVER": server.url},
            # the corpus lies outside the data dir, the server on loopback (docs/security.md)
            allowed_roots=[str(corpus.root)],
            allowed_hosts=["127.0.0.1"],
        ),
    }
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize([sources], instance=instance, resources=resources).success
    keys = instance.get_dynamic_partitions("batches")
    results = {}
    for key in keys:
        results[key] = dg.materialize(
            [sources, videos, clips, frames],
            selection=[videos, clips, frames],
            partition_key=key,
            instance=instance,
            resources=resources,
            run_config={"ops": FAST},
        )
    return {
        "instance": instance,
        "resources": resources,
        "keys": keys,
        "results": results,
        "store": TableStore(root / "data"),
    }


def test_batches_registered_as_dynamic_partitions(built):
    assert sorted(built["keys"]) == [
        "captioned-0000",
        "local_images-0000",
        "local_images-0001",
        "local_videos-0000",
        "loopback-0000",
    ]
    assert all(r.success for r in built["results"].values())


def test_all_contract_checks_pass(built):
    for r in built["results"].values():
        evals = r.get_asset_check_evaluations()
        assert evals and all(e.passed for e in evals), [e.check_name for e in evals if not e.passed]


def test_tables_and_catalog(built):
    store = built["store"]
    v = store.read("videos")
    assert sorted(v["source"]) == ["local_videos", "local_videos", "loopback", "loopback"]
    c = store.query("select video_id, count(*) filter (where is_engaging) n from clips group by 1")
    assert len(c) == 4 and (c["n"] == 1).all()  # exactly one engaging clip per video
    subs = store.query(
        "select transcript_status, transcript from clips where video_id in "
        "(select video_id from videos where subtitle_kind is not null)"
    )
    assert (subs["transcript_status"] == "subtitles").all() and subs["transcript"].str.contains("GOAL").any()
    f = store.read("frames")
    kinds = f["kind"].value_counts().to_dict()
    assert kinds["image"] == 12 + 3  # 14 folder images minus corrupt and 1x1, plus 3 table rows
    n_clips = len(store.read("clips"))
    assert kinds["clip_frame"] == 6 * n_clips and kinds["pool_frame"] >= 4
    assert f["caption"].notna().sum() == 3
    assert (built["store"].data_dir / f["path"].iloc[0]).is_file()
    with open_catalog(store) as con:
        assert con.execute("select count(*) from frames").fetchone()[0] == len(f)


def test_every_bad_input_is_a_reject_row(built):
    rej = built["store"].read("rejects")
    got = {(r.stage, r.reason) for r in rej.itertuples()}
    assert {
        ("sources", "not_found"),
        ("sources", "missing_image"),
        ("videos", "empty_file"),
        ("videos", "decode_error"),
        ("frames", "decode_error"),
        ("frames", "too_small"),
    } <= got
    assert (rej[rej.stage == "videos"]["reason"] == "decode_error").sum() == 2  # truncated + text file


def test_rerun_replaces_rows_and_item_rerun_keeps_others(built):
    store, key = built["store"], "local_videos-0000"
    before = {t: len(store.read(t, parts=[key])) for t in ("videos", "clips", "frames")}
    rej_before = len(store.read("rejects"))
    args = dict(instance=built["instance"], resources=built["resources"], partition_key=key)
    assert dg.materialize(
        [sources, videos, clips, frames], selection=[videos, clips, frames], run_config={"ops": FAST}, **args
    ).success
    assert {t: len(store.read(t, parts=[key])) for t in before} == before
    assert len(store.read("rejects")) == rej_before
    one = store.read("videos", parts=[key])["video_id"].iloc[0]
    cfg = {
        "ops": {
            "clips": {"config": {"item_ids": [one], "clip_files": "copy"}},
            "frames": {"config": {"item_ids": [one], "frames_per_clip": 3}},
        }
    }
    assert dg.materialize([videos, clips, frames], selection=[clips, frames], run_config=cfg, **args).success
    f = store.read("frames", parts=[key])
    per_video = f[f.kind == "clip_frame"].groupby("item_id").size().to_dict()
    assert per_video[one] == 3 and all(n == 6 for v, n in per_video.items() if v != one)
    assert len(store.read("rejects")) == rej_before
