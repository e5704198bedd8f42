"""A push renews the pre-signed media URLs of a task it keeps, in place, on the real Label Studio
(the session server): the task keeps its id, identity and annotations; only the URLs change. Both
push paths: the review loop's (``push.push``: plan and execute) and the add-only one
(``push.add_new``: protocol steps). The URLs come from botocore's real SigV4 signer, its clock set
back to sign "six and a half days ago"; no bucket is needed, Label Studio stores the text."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import botocore.auth
import pandas as pd
from botocore.config import Config
from botocore.session import get_session

from forge.people import identity as ident
from forge.people import project, push
from forge.people.push import TASK_COLUMNS, Wanted

CONFIG = '<View><Text name="text" value="$text"/><Choices name="c" toRequire="true" toName="text">' + (
    '<Choice value="yes"/><Choice value="no"/></Choices></View>'
)


def _url(monkeypatch, key: str, days_ago: float) -> str:
    client = get_session().create_client(
        "s3",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="AKIDRESIGN",
        aws_secret_access_key="not-a-real-secret",
        config=Config(signature_version="s3v4", s3={"addressing_style": "path"}),
    )
    then = datetime.now(UTC).replace(tzinfo=None) - timedelta(days=days_ago)
    with monkeypatch.context() as m:
        m.setattr(botocore.auth, "get_current_datetime", lambda: then)
        return client.generate_presigned_url("get_object", {"Bucket": "b", "Key": key}, ExpiresIn=7 * 24 * 3600)


def test_a_kept_task_gets_fresh_urls_and_keeps_its_annotations(review_env, monkeypatch):
    _data, ls, _srv, _configure = review_env
    p = project.ensure(ls, "Resign push · test", CONFIG, project.settings(1, "resign"))

    def wanted(days_ago: float) -> dict[str, Wanted]:
        return {
            "i0": Wanted(
                {"item_id": "i0", "revision": "r1", "text": "t", "image": _url(monkeypatch, "f/a.jpg", days_ago)}
            )
        }

    old = wanted(6.5)
    rows, counts = push.push(ls, "test", "review", p, old, pd.DataFrame(columns=TASK_COLUMNS), set())
    assert counts["created"] == 1 and "resigned" not in counts
    (tid,) = rows["task_id"].tolist()
    made = ls.request("GET", f"/api/tasks/{tid}")
    ann = ls.annotate(tid, [{"from_name": "c", "to_name": "text", "type": "choices", "value": {"choices": ["yes"]}}])

    fresh = wanted(0)
    again, counts = push.push(ls, "test", "review", p, fresh, rows, set())
    assert counts["kept"] == 1 and counts["resigned"] == 1 and counts["created"] == 0
    assert again["task_id"].tolist() == [tid]
    now = ls.request("GET", f"/api/tasks/{tid}")
    assert now["data"] == fresh["i0"].data != made["data"]
    assert now["meta"] == made["meta"]  # the identity the push matches on
    assert [a["id"] for a in ls.annotations(tid)] == [ann["id"]]  # people's work untouched
    _rows, counts = push.push(ls, "test", "review", p, wanted(0), again, set())
    assert "resigned" not in counts  # fresh URLs are left as they are

    # the add-only push (protocol steps) renews its tasks the same way
    q = project.ensure(ls, "Resign add · test", CONFIG, project.settings(1, "resign"))
    own = ident.Owner(ls, int(q["id"]), "test", "step", "unit_id")
    unit = {"unit_id": "u0", "text": "t"}
    assert push.add_new(own, {"u0": Wanted({**unit, "image": _url(monkeypatch, "f/u.jpg", 6.5)})}) == ["u0"]
    newer = {"u0": Wanted({**unit, "image": _url(monkeypatch, "f/u.jpg", 0)})}
    assert push.add_new(own, newer) == [] and own.resigned == 1
    assert [t["data"] for t in own.tasks()] == [newer["u0"].data]
