"""Exports and review media on object storage: a version folder published to the bucket (its
manifest last, never a second copy), loaded with ``datasets`` straight from the bucket, fetched by
another machine; pre-signed URLs serve one object to a reader without credentials."""

from __future__ import annotations

import json
import urllib.request
from urllib.parse import parse_qs, urlsplit

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from forge.storage import TableStore, location, objects
from forge.storage.trees import fetch_tree, presigned_url, publish_tree


def _version(store: TableStore) -> str:
    """A small export version in the work dir, laid out as forge/export/write.py writes one."""
    rel = "exports/demo_bench/v1"
    root = store.data_dir / rel
    (root / "parquet").mkdir(parents=True)
    rows = {"item_id": ["a", "b", "c"], "question": ["q1", "q2", "q3"], "answer": [0, 1, 2]}
    pq.write_table(pa.table(rows), root / "parquet" / "test.parquet")
    (root / "README.md").write_text("---\nconfigs: []\n---\n# demo\n")
    (root / "manifest.json").write_text(json.dumps({"version": "v1", "n_items": 3}))
    return rel


def test_an_export_in_the_bucket_loads_with_datasets(s3_url, s3_server, tmp_path, monkeypatch):
    import datasets

    store = TableStore(s3_url)
    rel = _version(store)
    assert publish_tree(store, rel, marker="manifest.json", once=True) == 3
    assert publish_tree(store, rel, marker="manifest.json", once=True) == 0  # a retry: no second copy

    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf"))
    opts = {
        "key": s3_server.access_key,
        "secret": s3_server.secret_key,
        "client_kwargs": {"endpoint_url": s3_server.endpoint, "region_name": "us-east-1"},
    }
    ds = datasets.load_dataset(
        "parquet", data_files={"test": store.remote.url_of(f"{rel}/parquet/test.parquet")}, storage_options=opts
    )
    assert ds["test"]["item_id"] == ["a", "b", "c"] and ds["test"]["answer"] == [0, 1, 2]

    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / "laptop"))  # another machine reads it back
    location.forget_remotes()
    other = TableStore(s3_url)
    assert fetch_tree(other, "exports/demo_bench") == 3
    assert json.loads((other.data_dir / rel / "manifest.json").read_text())["n_items"] == 3
    assert fetch_tree(other, "exports/demo_bench") == 0


def test_presigned_url_serves_one_object_without_credentials(s3_url, s3_server, monkeypatch):
    from moto import settings

    store = TableStore(s3_url)
    key = objects.content_key(b"frame-bytes", "media/frames", ".jpg")
    objects.put_once(store, key, b"frame-bytes")
    url = presigned_url(store, key, expires_s=600)
    query = parse_qs(urlsplit(url).query)
    assert url.startswith(f"{s3_server.endpoint}/{store.remote.bucket}/{store.remote.object_key(key)}")
    assert query["X-Amz-Expires"] == ["600"] and query["X-Amz-Signature"][0]
    assert query["X-Amz-Credential"][0].startswith(s3_server.access_key) and s3_server.secret_key not in url
    # moto's IAM check reads only the Authorization header (a query-signed GET is a 500 there), so the
    # GET below runs with its checks off: it shows the URL names the object, not that S3 would verify it
    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", float("inf"))
    with urllib.request.urlopen(url, timeout=10) as resp:  # no credentials: everything is in the URL
        assert resp.read() == b"frame-bytes"


def test_local_store_has_no_presigned_url_and_publishes_nothing(tmp_path):
    store = TableStore(tmp_path / "data")
    (store.data_dir / "exports" / "b").mkdir(parents=True)
    (store.data_dir / "exports" / "b" / "x.txt").write_text("x")
    assert publish_tree(store, "exports/b") == 0 and fetch_tree(store, "exports/b") == 0
    with pytest.raises(ValueError, match="local data dir"):
        presigned_url(store, "exports/b/x.txt")
