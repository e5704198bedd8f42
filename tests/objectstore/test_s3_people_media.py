"""The people loop's media on object storage: the tasks pushed to Label Studio (review, and the
blind baseline, built here without Label Studio: the task payloads only) carry pre-signed URLs of
the bucket's objects instead of local-files paths; each is fetched without credentials and holds
no secret. The blind copies are made, put to the bucket under their keyed-hash names (never a
content key that equals the gold's) and presigned; the local default keeps local-files URLs."""

from __future__ import annotations

import hashlib
import json
import urllib.request
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest

from forge.benchmarks.registry import get
from forge.evals import human
from forge.people import project
from forge.people.links import BLIND_MEDIA
from forge.people.push import Wanted
from forge.review import stages
from forge.storage import TableStore, location, objects
from tests.review import world


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as resp:  # no credentials: everything is in the URL
        return resp.read()


def _presigned(url: str, s3_server, store: TableStore, key: str) -> None:
    """``url`` is a SigV4 pre-signed GET of ``key`` that names no secret."""
    assert url.startswith(f"{s3_server.endpoint}/{store.remote.bucket}/{store.remote.object_key(key)}?"), url
    query = parse_qs(urlsplit(url).query)
    assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"] and query["X-Amz-Signature"][0]
    assert query["X-Amz-Credential"][0].startswith(s3_server.access_key + "/")


@pytest.fixture
def on_bucket(s3_url, s3_server, tmp_path, monkeypatch):
    """Two images and a clip that another machine put to the bucket, and this (the review)
    machine's store on it, with its own empty work dir."""
    made = tmp_path / "elsewhere"
    rels = [world.image(made, f"iibench_{i}", (40 * i, 90, 160)) for i in (1, 2)]
    driver = TableStore(s3_url)
    for rel in rels:
        driver.remote.put(rel, (made / rel).read_bytes())
    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / "review-machine"))
    location.forget_remotes()
    # moto's IAM check reads only the Authorization header (a query-signed GET is a 500 there), so
    # the GETs run with its checks off: they show each URL names its object and needs no credentials
    from moto import settings

    monkeypatch.setattr(settings, "INITIAL_NO_AUTH_ACTION_COUNT", float("inf"))
    return TableStore(s3_url), made, rels


def _items(rels: list[str]) -> pd.DataFrame:
    opts = [f"Option {c}" for c in "ABCD"]
    rows = [
        world.base(f"ii{i}", "iibench", rel, task="mcq", options=opts, option_types=["correct", *["distractor"] * 3])
        for i, rel in enumerate(rels, 1)
    ]
    return pd.DataFrame(rows)


def test_review_tasks_carry_presigned_urls_fetchable_without_credentials(on_bucket, s3_server):
    store, made, rels = on_bucket
    spec = get("iibench")
    wanted = project.served(store, stages._wanted(_items(rels), spec.review, {}, "review"))
    for (key, w), rel in zip(sorted(wanted.items()), rels, strict=True):
        url = w.data["image"]
        _presigned(url, s3_server, store, rel)
        assert _fetch(url) == (made / rel).read_bytes()
        assert w.data["item_id"] == key and w.data["revision"]  # the push still matches on these
        assert s3_server.secret_key not in json.dumps(w.data)
    assert not (store.data_dir / "media").exists()  # nothing was fetched to serve it from here


def test_only_files_of_the_served_folder_are_presigned(on_bucket, tmp_path):
    store, _made, rels = on_bucket
    data = {
        "image": f"/data/local-files/?d={rels[0]}",
        "members": [{"image": f"/data/local-files/?d={rels[1]}"}],  # a unit's member blocks
        "question": "/data/local-files/?d=media/../tables/items/_manifest.json",  # a text that looks like one
        "context_text": "/data/local-files/?d=tables/items/_manifest.json",
        "heading": "plain text",
    }
    out = project.served(store, {"k": Wanted(data)})["k"].data
    assert out["image"].startswith("http") and out["members"][0]["image"].startswith("http")
    assert {k: out[k] for k in ("question", "context_text", "heading")} == {
        k: data[k] for k in ("question", "context_text", "heading")
    }
    local = TableStore(tmp_path / "data")  # the local default: local-files URLs, unchanged
    assert project.served(local, {"k": Wanted(data)})["k"].data == data


def test_blind_tasks_carry_presigned_urls_of_blind_copies_put_to_the_bucket(on_bucket, s3_server):
    store, made, rels = on_bucket
    spec = get("iibench")
    items = _items(rels)
    wanted, refused = human.blind_tasks(store, spec, spec.review, items)
    assert refused == {} and len(wanted) == 2
    gold = {hashlib.sha256((made / r).read_bytes()).hexdigest(): r for r in rels}
    copies = store.remote.listing(f"{BLIND_MEDIA}/iibench")
    assert len(copies) == 2
    for key, w in wanted.items():
        url = w.data["image"]
        name = next(n for n in copies if store.remote.object_key(f"{BLIND_MEDIA}/iibench/{n}") in url)
        _presigned(url, s3_server, store, f"{BLIND_MEDIA}/iibench/{name}")
        body = _fetch(url)
        sha = hashlib.sha256(body).hexdigest()
        assert sha not in gold  # other bytes than any gold file
        # its key is the keyed-hash name: neither a gold file's path nor a content key of either file
        assert name.removesuffix(".png") not in {*gold, sha} and not any(r in url for r in rels)
        assert objects.content_key(body, "media/frames", ".png").split("/")[-1] != name
        text = json.dumps(w.data)
        assert s3_server.secret_key not in text and not any(r in text for r in rels)  # no gold path
        assert w.data["item_id"] == key and key not in {"ii1", "ii2"}  # the opaque key, not the item's id
    # a second build (or another machine) keeps the copies: the same names, nothing put again
    again, _ = human.blind_tasks(store, spec, spec.review, items)
    assert store.remote.listing(f"{BLIND_MEDIA}/iibench") == copies
    assert {k: urlsplit(w.data["image"]).path for k, w in again.items()} == {
        k: urlsplit(w.data["image"]).path for k, w in wanted.items()
    }


def test_no_folder_is_served_from_a_machine_on_the_bucket(on_bucket, tmp_path):
    """On object storage the projects get no local-files storage: nothing of this machine's work
    dir is served (the tasks name the bucket's objects); a local data dir still serves its folder."""

    class NoCalls:
        def __getattr__(self, name):
            raise AssertionError(f"Label Studio was asked for {name} on a bucket")

    store, _made, _rels = on_bucket
    assert project.serve(NoCalls(), 1, store.data_dir, store.data_dir / "media") == []

    class Recorder:
        def __init__(self):
            self.storages = []

        def ensure_local_storage(self, pid, path):
            self.storages.append((pid, path))

    local = TableStore(tmp_path / "data")
    (local.data_dir / "media").mkdir(parents=True)
    ls = Recorder()
    assert project.serve(ls, 7, local.data_dir, local.data_dir / "media") == []
    assert ls.storages == [(7, str(local.data_dir / "media"))]
