"""frame_hashes → duplicates → text_ratio materialized with Dagster on a temp data dir."""

import dagster as dg
import pytest
from PIL import Image

from assets.ingest.filters import duplicates, duplicates_groups, frame_hashes, text_ratio
from forge.storage import TableStore, open_catalog
from resources.storage import StorageResource
from tests.filters.conftest import frames_table

BATCHES = ["memes-0000", "reposts-0000", "vids-0000"]


@pytest.fixture
def pipeline(media, tmp_path, ocr_resource):
    store = TableStore(tmp_path / "data")
    clips = tmp_path / "clips"
    clips.mkdir()
    rows = [
        {
            "frame_id": "img_astro",
            "batch": "memes-0000",
            "source": "memes",
            "item_id": "img_astro",
            "file": media["astronaut"],
        },
        {
            "frame_id": "img_coffee",
            "batch": "memes-0000",
            "source": "memes",
            "item_id": "img_coffee",
            "file": media["coffee"],
        },
        {
            "frame_id": "img_heavy",
            "batch": "memes-0000",
            "source": "memes",
            "item_id": "img_heavy",
            "file": media["text_heavy"],
        },
        {
            "frame_id": "img_broken",
            "batch": "memes-0000",
            "source": "memes",
            "item_id": "img_broken",
            "file": media["truncated"],
        },
        {
            "frame_id": "img_repost",
            "batch": "reposts-0000",
            "source": "reposts",
            "item_id": "img_repost",
            "file": media["astronaut_watermark"],
        },
        {
            "frame_id": "img_coffee_small",
            "batch": "reposts-0000",
            "source": "reposts",
            "item_id": "img_coffee_small",
            "file": media["coffee_resized"],
        },
        {
            "frame_id": "img_hopper",
            "batch": "reposts-0000",
            "source": "reposts",
            "item_id": "img_hopper",
            "file": media["hopper"],
        },
    ]
    for k, name in enumerate(["bus", "chelsea"]):  # a video and its half-size re-upload
        im = Image.open(media[name]).convert("RGB")
        im.resize((640, 480)).save(clips / f"a{k}.png")
        im.resize((320, 240)).save(clips / f"b{k}.jpg", quality=50)
        for clip, item, f in (("clip_a", "vid_a", clips / f"a{k}.png"), ("clip_b", "vid_b", clips / f"b{k}.jpg")):
            rows.append(
                {
                    "frame_id": f"{clip}_f{k:03d}",
                    "batch": "vids-0000",
                    "source": "vids",
                    "item_id": item,
                    "clip_id": clip,
                    "frame_index": k,
                    "timestamp_s": 1.0 + k,
                    "file": f,
                }
            )
    frames_table(store, rows)
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", BATCHES)
    resources = {"storage": StorageResource(data_dir=str(store.data_dir)), "ocr": ocr_resource}
    return store, instance, resources


def _checks_passed(result):
    evals = result.get_asset_check_evaluations()
    assert evals, "no asset checks ran"
    return {e.check_name: e.passed for e in evals}


@pytest.mark.slow
def test_hash_dedup_ocr_end_to_end(pipeline):
    store, instance, resources = pipeline
    for b in BATCHES:
        res = dg.materialize([frame_hashes], partition_key=b, instance=instance, resources=resources)
        assert res.success and all(_checks_passed(res).values())
    hashes = store.read("frame_hashes")
    assert len(hashes) == 10 and "img_broken" not in set(hashes["frame_id"])
    rej = store.read("rejects")
    broken = rej[(rej["stage"] == "frame_hashes") & (rej["item_id"] == "img_broken")]
    assert broken["reason"].tolist() == ["decode_error"] and broken["partition"].tolist() == ["memes-0000"]

    res = dg.materialize([duplicates, duplicates_groups], instance=instance, resources=resources)
    assert res.success
    assert _checks_passed(res) == {"contract_duplicates": True, "duplicates_groups": True}
    d = store.read("duplicates").set_index("frame_id")
    assert len(d) == 10
    assert not d.at["img_repost", "is_kept"] and d.at["img_repost", "kept_frame_id"] == "img_astro"  # across sources
    assert not d.at["img_coffee_small", "is_kept"] and d.at["img_coffee_small", "kept_frame_id"] == "img_coffee"
    assert d.loc[["img_astro", "img_coffee", "img_heavy", "img_hopper"], "is_kept"].all()
    assert d.loc[["clip_a_f000", "clip_a_f001"], "is_kept"].all()
    assert d.loc[["clip_b_f000", "clip_b_f001"], "kept_frame_id"].tolist() == ["clip_a_f000", "clip_a_f001"]
    assert (d.loc[["clip_b_f000", "clip_b_f001"], "method"] == "clip").all()
    rej = store.read("rejects")
    dup = rej[rej["stage"] == "duplicates"].set_index("item_id")
    assert dup.loc["img_repost", "reason"] == "duplicate" and dup.loc["img_repost", "related_id"] == "img_astro"
    assert dup.loc["clip_b", "related_id"] == "clip_a"
    assert set(dup.index) == {"img_repost", "img_coffee_small", "clip_b_f000", "clip_b_f001", "clip_b"}

    for b in BATCHES:
        res = dg.materialize([text_ratio], partition_key=b, instance=instance, resources=resources)
        assert res.success and all(_checks_passed(res).values())
        [mat] = res.asset_materializations_for_node("text_ratio")
        # on CPU the detector ran on ONNX Runtime (detector_engine auto), and the metadata says so
        assert mat.metadata["detector_engine"].value == "onnx"
    t = store.read("text_ratio").set_index("frame_id")
    # only the frames dedup kept were OCRed
    assert set(t.index) == {"img_astro", "img_coffee", "img_heavy", "img_hopper", "clip_a_f000", "clip_a_f001"}
    assert t.at["img_heavy", "ratio"] > 0.3 and not t.at["img_heavy", "passes"]
    # method=detect, recognise=needed (defaults): a rejected still is measured, not read (its text
    # reaches no evidence); recognition on demand is tested in test_text_boxes.py
    assert t.at["img_heavy", "text"] == "" and t.at["img_heavy", "n_boxes"] >= 3
    assert t.at["img_astro", "ratio"] < 0.05 and t.at["img_astro", "passes"]
    assert t.at["clip_a_f000", "clip_passes"] and t["clip_passes"].isna().sum() == 4
    c = store.read("clip_text_ratio")
    assert c["clip_id"].tolist() == ["clip_a"] and c["n_frames"].tolist() == [2] and c["passes"].all()
    rej = store.read("rejects")
    heavy = rej[(rej["stage"] == "text_ratio")]
    assert heavy["item_id"].tolist() == ["img_heavy"] and heavy["reason"].tolist() == ["text_heavy"]

    # the DuckDB catalog has a view per table; the documented Hamming query works in SQL
    with open_catalog(store) as con:
        n = con.execute("select count(*) from duplicates where not is_kept").fetchone()[0]
        assert n == 4
        near = con.execute("""
            select b.frame_id from frame_hashes a join frame_hashes b on a.frame_id < b.frame_id
            where a.frame_id = 'img_astro' and least(bit_count(xor(a.phash_int, b.phash_int)),
                                                     bit_count(xor(a.dhash_int, b.dhash_int))) <= 8
        """).fetchall()
        assert near == [("img_repost",)]

    # re-running a partition replaces its rows
    dg.materialize([frame_hashes], partition_key="memes-0000", instance=instance, resources=resources)
    assert len(store.read("frame_hashes")) == 10
    assert len(store.read("rejects").query("stage == 'frame_hashes'")) == 1
