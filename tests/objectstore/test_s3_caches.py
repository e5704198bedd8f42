"""The LLM reply cache and the stage cache on object storage: each machine's SQLite is a working
copy in its own work dir; entries are published to the bucket, so a second machine (another work
dir, a fresh process state) reuses them instead of paying or computing again."""

from __future__ import annotations

import pandas as pd

from forge.llm.cache import default_cache_path, open_cache
from forge.storage import RejectLog, TableStore, location, objects
from forge.storage.stage_cache import StageCache, reuse_batch


def _other_machine(monkeypatch, tmp_path, name: str) -> None:
    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / name))
    location.forget_remotes()


def test_a_reply_paid_on_one_machine_is_reused_on_another(s3_url, tmp_path, monkeypatch):
    monkeypatch.setenv(location.DATA_URL_ENV, s3_url)
    first = open_cache()
    assert default_cache_path().is_relative_to(tmp_path / "work")  # the working copy, not data/
    assert first.get("k1") is None
    first.put("k1", {"answer": "yes"}, model="m", prompt_name="p")
    first.put("k2", {"answer": "no"}, model="m", prompt_name="q")

    _other_machine(monkeypatch, tmp_path, "node2")
    second = open_cache()
    assert len(second) == 0  # nothing local: the hit comes from the bucket
    assert second.get("k1") == {"answer": "yes"} and second.hits == 1 and second.misses == 0
    assert len(second) == 1  # kept in the working copy
    assert second.get("absent") is None and second.misses == 1

    assert second.delete_prompt("p") == 1  # forgetting a prompt forgets its published replies
    _other_machine(monkeypatch, tmp_path, "node3")
    third = open_cache()
    assert third.get("k1") is None and third.get("k2") == {"answer": "no"}


def test_local_cache_publishes_nothing(tmp_path, monkeypatch):
    monkeypatch.delenv(location.DATA_URL_ENV, raising=False)
    monkeypatch.setenv(location.DATA_DIR_ENV, str(tmp_path / "data"))
    cache = open_cache()
    assert cache.shared is None and cache.path == tmp_path / "data" / "cache" / "llm_cache.sqlite"


def test_stage_results_and_batches_reused_from_the_bucket(s3_url, tmp_path, monkeypatch):
    store = TableStore(s3_url)
    cache = StageCache.for_store(store)
    cache.put_many("ocr", {"a": {"text": "hi"}, "b": {"text": "yo"}})
    frame = "media/frames/b1/v1/f000.jpg"
    objects.put_once(store, frame, b"jpeg")
    rows = pd.DataFrame({"frame_id": ["f000"], "path": [frame]})
    computed: list[int] = []

    def compute() -> pd.DataFrame:
        computed.append(1)
        log.add("v2", "decode_error", "broken")
        return rows

    log = RejectLog("frames", "b1")
    reuse_batch(cache, "frames", "batchkey", log, compute, store.data_dir)
    assert computed == [1]

    _other_machine(monkeypatch, tmp_path, "node2")
    store2 = TableStore(s3_url)
    assert store2.data_dir != store.data_dir
    cache2 = StageCache.for_store(store2)
    assert cache2.get_many("ocr", ["a", "b", "c"]) == {"a": {"text": "hi"}, "b": {"text": "yo"}}
    assert cache2.summary()["ocr"] == {"reused": 2, "computed": 1}
    log2 = RejectLog("frames", "b1")
    got = reuse_batch(cache2, "frames", "batchkey", log2, compute, store2.data_dir)
    assert computed == [1]  # not computed again on the second machine
    assert got.to_dict("records") == rows.to_dict("records")
    assert [r["reason"] for r in log2.rows] == ["decode_error"]

    store.remote.delete(frame)  # a media object the batch names is gone: recompute
    _other_machine(monkeypatch, tmp_path, "node3")
    store3 = TableStore(s3_url)
    reuse_batch(StageCache.for_store(store3), "frames", "batchkey", RejectLog("frames", "b1"), compute, store3.data_dir)
    assert computed == [1, 1]
