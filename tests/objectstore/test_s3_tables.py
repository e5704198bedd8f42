"""Tables, manifests and the catalog on a real S3-compatible server (moto, 127.0.0.1), with
faults injected by the proxy in front of it (tests/objectstore/s3_server.py)."""

from __future__ import annotations

import logging
import threading

import pandas as pd
import pytest

from forge.storage import TableStore, location, open_catalog, refresh_catalog
from forge.storage.location import StorageUnavailable


def _objects(store: TableStore, rel: str = "") -> dict[str, float]:
    return store.remote.listing(rel) if rel else store.remote.listing("")


def test_a_partition_is_replaced_never_duplicated_and_reads_equal_the_local_store(s3_url, tmp_path):
    s3, local = TableStore(s3_url), TableStore(tmp_path / "data")
    for store in (s3, local):
        store.write("items", pd.DataFrame({"item_id": ["a", "b"], "batch": ["b1", "b1"]}), part="b1")
        store.write("items", pd.DataFrame({"item_id": ["c"], "batch": ["b2"]}), part="b2")
        store.write("items", pd.DataFrame({"item_id": ["a2", "b2"], "batch": ["b1", "b1"]}), part="b1")  # re-run
    assert s3.remote is not None and local.remote is None
    read = s3.read("items").sort_values("item_id").reset_index(drop=True)
    assert read.equals(local.read("items").sort_values("item_id").reset_index(drop=True))
    assert sorted(read["item_id"]) == ["a2", "b2", "c"]
    assert s3.parts("items") == ["b1", "b2"] and s3.table_names() == ["items"]
    assert s3.read_batch("items", "b2")["item_id"].tolist() == ["c"]
    assert s3.query("select count(*) as n from items")["n"].iloc[0] == 3
    assert all(str(f).startswith(s3_url + "/tables/items/") for f in s3.files("items"))
    assert not (tmp_path / "work" / "tables").exists()  # tables live in the bucket only


def test_writers_racing_on_one_manifest_lose_no_partition(s3_url):
    store = TableStore(s3_url)
    errors: list[BaseException] = []

    def write(i: int) -> None:
        try:
            store.write("frames", pd.DataFrame({"frame_id": [f"f{i}"]}), part=f"p{i}")
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert store.parts("frames") == sorted(f"p{i}" for i in range(8))  # every conditional PUT's change kept
    assert sorted(store.read("frames")["frame_id"]) == sorted(f"f{i}" for i in range(8))


def test_a_reader_never_fails_while_the_manifest_is_replaced(s3_url):
    store = TableStore(s3_url)
    store.write("clips", pd.DataFrame({"clip_id": ["c0"]}), part="all")
    stop, seen, errors = threading.Event(), set(), []

    def read() -> None:
        while not stop.is_set():
            try:
                seen.add(len(store.read("clips")))
            except BaseException as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    for n in range(1, 9):
        store.write("clips", pd.DataFrame({"clip_id": [f"c{i}" for i in range(n)]}), part="all")
    stop.set()
    reader.join()
    assert not errors
    assert seen <= set(range(1, 9)) and seen  # always one whole version


def test_throttling_and_dropped_connections_are_retried_counted_and_leave_one_object(s3_url, s3_server):
    store = TableStore(s3_url)
    before = location.fault_counts()
    s3_server.faults.add("503", "503", "drop", "drop", "drop", "503")
    store.write("items", pd.DataFrame({"item_id": ["a"]}), part="b1")
    s3_server.faults.add("drop", "drop", "503", "drop", "drop")
    store.write("items", pd.DataFrame({"item_id": ["a", "b"]}), part="b1")
    after = location.fault_counts()
    assert after.get("throttled", 0) - before.get("throttled", 0) >= 3
    assert after.get("connection", 0) - before.get("connection", 0) >= 1
    assert s3_server.faults.pending == []  # every injected fault was met
    assert sorted(store.read("items")["item_id"]) == ["a", "b"]
    parquet = [n for n in _objects(store, "tables/items") if n.endswith(".parquet")]
    assert len(parquet) == 2  # the live file and the one it retired: no partial or second copy


def test_a_write_whose_manifest_swap_fails_leaves_no_object(s3_url, monkeypatch):
    from forge.storage import remote_manifest

    store = TableStore(s3_url)

    def refuse(*_a, **_k):
        raise OSError("manifest swap refused")

    monkeypatch.setattr(remote_manifest, "publish", refuse)
    with pytest.raises(OSError, match="refused"):
        store.write("items", pd.DataFrame({"item_id": ["a"]}))
    assert [n for n in _objects(store) if n.endswith(".parquet")] == []


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("missing bucket", "does not exist"),
        ("wrong secret", "credentials"),
        ("unreachable endpoint", "cannot be reached"),
    ],
)
def test_an_unusable_location_stops_at_the_start_with_one_clear_message(
    case, message, s3_url, s3_server, monkeypatch, tmp_path
):
    url = s3_url
    if case == "missing bucket":
        url = "s3://no-such-bucket-here/forge"
    elif case == "wrong secret":
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    else:
        monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens on port 9
    location.forget_remotes()
    with pytest.raises(StorageUnavailable, match=message) as info:
        TableStore(url)
    assert "nothing was written" in str(info.value)
    assert s3_server.secret_key not in str(info.value)
    assert not (tmp_path / "work").exists()
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3_server.endpoint)
    location.forget_remotes()
    assert TableStore(s3_url).remote.listing("") == {}  # the real bucket: untouched


def test_credentials_in_the_url_are_refused_without_echoing_them(s3_url):
    with pytest.raises(StorageUnavailable) as info:
        TableStore("s3://AKIAX:topsecret@bucket/prefix")
    assert "topsecret" not in str(info.value)


def test_a_second_machine_rebuilds_the_catalog_from_the_bucket_reading_only(s3_url, tmp_path, monkeypatch):
    builder = TableStore(s3_url)
    builder.write("items", pd.DataFrame({"item_id": ["a", "b"]}), part="b1")
    builder.write("frames", pd.DataFrame({"frame_id": ["f"]}))
    views = refresh_catalog(builder)
    objects = _objects(builder)

    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / "laptop"))  # another machine: its own work dir
    location.forget_remotes()
    laptop = TableStore(s3_url)
    con = open_catalog(laptop)
    try:
        names = {r[0] for r in con.execute("select view_name from duckdb_views() where not internal").fetchall()}
        assert set(views) <= names  # the same view names as the builder's catalog
        assert con.execute("select count(*) from items").fetchone() == (2,)
        assert con.execute("select count(*) from frames").fetchone() == (1,)
    finally:
        con.close()
    assert laptop.catalog_path.is_file() and str(laptop.catalog_path).startswith(str(tmp_path / "laptop"))
    assert {k: v for k, v in _objects(laptop).items()} == objects  # nothing written to the bucket


def test_a_publish_sweeps_retired_objects_after_the_grace_period(s3_url, monkeypatch):
    monkeypatch.setenv("SUBTEXT_TABLE_GRACE_S", "0")
    store = TableStore(s3_url)
    store.write("items", pd.DataFrame({"item_id": ["a"]}))
    store.write("items", pd.DataFrame({"item_id": ["b"]}))
    refresh_catalog(store)  # stamps the retired file unlisted (grace 0: due at once)
    refresh_catalog(store)
    parquet = [n for n in _objects(store, "tables/items") if n.endswith(".parquet")]
    assert len(parquet) == 1 and store.read("items")["item_id"].tolist() == ["b"]


def test_no_credential_reaches_objects_catalog_or_logs(s3_url, s3_server, caplog):
    caplog.set_level(logging.DEBUG)
    store = TableStore(s3_url)
    store.write("items", pd.DataFrame({"item_id": ["a"]}))
    refresh_catalog(store)
    secret = s3_server.secret_key.encode()
    for name in store.remote.listing(""):
        assert secret not in store.remote.get(name)[0], name
    for path in store.data_dir.rglob("*"):
        if path.is_file():
            assert secret not in path.read_bytes(), path
    assert s3_server.secret_key not in caplog.text


def test_make_query_reads_the_bucket_named_by_the_environment(s3_url, monkeypatch):
    from forge.console import query

    TableStore(s3_url).write("rejects_demo", pd.DataFrame({"stage": ["frames", "frames", "ocr"]}))
    monkeypatch.setenv(location.DATA_URL_ENV, s3_url)
    assert location.configured_location() == s3_url
    out = query.run_query(location.configured_location(), "select count(*) as n from rejects_demo")
    assert "3" in out
