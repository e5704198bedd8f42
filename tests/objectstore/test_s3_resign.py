"""Pre-signed media URLs of live tasks are renewed by a push before they expire (forge/people/
resign.py): a kept task whose URLs were signed long ago is planned with fresh URLs of the same
objects, everything else in it as it was; a recently signed task, a URL of another object and a
task of a decided item (nothing wanted for it) are left alone. Built without Label Studio: the
URLs are the real signer's (botocore), its clock set back to sign "days ago"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from urllib.parse import urlsplit

import botocore.auth
import pytest

from forge.people import project, resign
from forge.people.push import Wanted, plan
from forge.storage import TableStore


def _signed_days_ago(monkeypatch, store: TableStore, data: dict, days: float) -> dict:
    """``data``'s media as a push made ``days`` ago served them (the signer's clock set back)."""
    then = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=days)
    with monkeypatch.context() as m:
        m.setattr(botocore.auth, "get_current_datetime", lambda: then)
        return project.served(store, {"k": Wanted(data)})["k"].data


@pytest.fixture
def bucket_items(s3_url):
    store = TableStore(s3_url)
    for name in ("a", "b", "c"):
        store.remote.put(f"media/frames/{name}.jpg", name.encode())
    return store


def _data(item: str, image: str, others: list[str]) -> dict:
    return {
        "item_id": item,
        "revision": "r1",
        "image": f"/data/local-files/?d=media/frames/{image}.jpg",
        "members": [{"image": f"/data/local-files/?d=media/frames/{o}.jpg"} for o in others],
        "question": "What is implied?",
    }


def test_a_push_renews_only_urls_about_to_expire_and_only_with_the_same_object(bucket_items, monkeypatch):
    store = bucket_items
    wanted = project.served(store, {i: Wanted(_data(i, "a", ["b"])) for i in ("old", "new", "moved")})
    live = {
        "old": _signed_days_ago(monkeypatch, store, _data("old", "a", ["b"]), 6.5),  # half a day left
        "new": _signed_days_ago(monkeypatch, store, _data("new", "a", ["b"]), 2),  # five days left
        # the same key and revision naming another object (nothing a push would do): kept as it is
        "moved": _signed_days_ago(monkeypatch, store, _data("moved", "c", ["b"]), 6.5),
        # a decided item's task (kept, nothing wanted for it): no fresh URL to give it
        "decided": _signed_days_ago(monkeypatch, store, _data("decided", "a", []), 6.5),
    }
    tasks = {1: [{"id": n, "data": d, "annotations": [{"id": 9}]} for n, d in enumerate(live.values())]}
    p = plan("iibench", "review", {"id": 1, "title": "review"}, wanted, tasks, set(), keep={"decided"})
    steps = {s.key: s for s in p.steps}
    assert {k: s.action for k, s in steps.items()} == dict.fromkeys(live, "keep") and p.creations() == 0
    assert steps["new"].renew is None and steps["decided"].renew is None

    old = steps["old"].renew
    assert old is not None
    assert old["image"] == wanted["old"].data["image"] != live["old"]["image"]
    assert old["members"][0]["image"] == wanted["old"].data["members"][0]["image"]
    assert {k: v for k, v in old.items() if k not in ("image", "members")} == {
        k: v for k, v in live["old"].items() if k not in ("image", "members")
    }
    assert urlsplit(old["image"]).path == urlsplit(live["old"]["image"]).path  # the same object
    ends, life = resign.expiry(old["image"])
    assert life == timedelta(days=7) and ends - datetime.now(UTC) > timedelta(days=6)

    moved = steps["moved"].renew  # only its member (the same object b) is renewed, not the image of c
    assert moved["image"] == live["moved"]["image"]
    assert moved["members"][0]["image"] == wanted["moved"].data["members"][0]["image"]
    assert steps["old"].task["annotations"] == [{"id": 9}]  # the plan carries no change to them


def test_the_window_is_a_day_or_half_a_short_lifetime_and_text_is_never_a_url(bucket_items, monkeypatch):
    store = bucket_items
    monkeypatch.setenv("SUBTEXT_PRESIGN_S", "3600")  # an operator's one-hour URLs
    fresh = project.served(store, {"k": Wanted(_data("k", "a", []))})["k"].data
    url = fresh["image"]
    now = datetime.now(UTC)
    assert resign.renewed(fresh, fresh, now + timedelta(minutes=20)) is None  # 40 min left of 60
    assert resign.renewed(fresh, fresh, now + timedelta(minutes=40)) == fresh  # 20 min left: due
    assert resign.expiry("/data/local-files/?d=media/frames/a.jpg") is None
    assert resign.expiry(url.replace("X-Amz-Signature=", "X-Amz-Sig=")) is None
    # the local default: no pre-signed URL anywhere, nothing ever renewed
    local = {"image": "/data/local-files/?d=media/frames/a.jpg", "revision": "r1"}
    assert resign.renewed(local, local, now + timedelta(days=30)) is None
