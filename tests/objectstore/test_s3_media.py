"""Media on object storage: written once under a content-addressed key, fetched by workers into
their own work dir (moto on 127.0.0.1, faults from the proxy)."""

from __future__ import annotations

import threading

from forge.storage import TableStore, location, objects


def test_concurrent_and_retried_writers_leave_one_whole_object(s3_url, s3_server):
    store = TableStore(s3_url)
    data = bytes(range(256)) * 4096  # 1 MiB "frame"
    key = objects.content_key(data, "media/frames", ".jpg")
    wrote: list[bool] = []
    s3_server.faults.add("drop", "drop", "503")  # the first tries die mid-request
    threads = [threading.Thread(target=lambda: wrote.append(objects.put_once(store, key, data))) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrote.count(True) == 1 and len(wrote) == 6  # one writer; the others found it
    assert objects.put_once(store, key, data) is False  # a retried task: no second copy
    listing = store.remote.listing("media")
    assert list(listing) == [key.removeprefix("media/")]
    assert store.remote.get(key)[0] == data  # whole
    assert sum(location.fault_counts().values()) >= 1


def test_a_worker_fetches_into_its_own_work_dir_and_local_stores_keep_their_path(s3_url, tmp_path, monkeypatch):
    store = TableStore(s3_url)
    key = objects.content_key(b"clip", "media/clips", ".mp4")
    objects.put_once(store, key, b"clip")
    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / "node2"))  # another node
    location.forget_remotes()
    node2 = TableStore(s3_url)
    got = objects.fetch(node2, key)
    assert got == tmp_path / "node2" / key and got.read_bytes() == b"clip"
    assert not [p for p in (tmp_path / "node2").rglob("*.tmp")]

    local = TableStore(tmp_path / "data")
    assert objects.put_once(local, key, b"clip") and not objects.put_once(local, key, b"other")
    assert objects.fetch(local, key) == local.data_dir / key and (local.data_dir / key).read_bytes() == b"clip"
