"""Messages that say what is wrong with Label Studio (docs/review.md): "not reachable" (nothing
answers), "reachable but failing (HTTP 5xx)" (a server that answers with errors; never read as a
deleted project), and "database replaced" (the sensor's reason, forge/review/loop.py). A tiny
HTTP server on 127.0.0.1 answering 500 stands in for a failing Label Studio."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from forge.people import identity as ident
from forge.people import ledger, read
from forge.people.client import LabelStudio, ReviewAPIError, ReviewServerDown, ReviewServerFailing


class Failing(BaseHTTPRequestHandler):
    status = 500

    def _answer(self) -> None:
        body = b'{"detail": "boom"}'
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = do_PATCH = _answer

    def log_message(self, *args) -> None:  # quiet
        pass


@pytest.fixture
def failing_server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_server_answering_500_is_reachable_but_failing_not_down(failing_server):
    ls = LabelStudio(failing_server, "t")
    with pytest.raises(ReviewServerFailing) as exc:
        ls.ensure_up()
    msg = str(exc.value)
    assert "reachable but failing (HTTP 500" in msg and "not running" not in msg and "not reachable" not in msg
    with pytest.raises(ReviewServerFailing, match=r"reachable but failing \(HTTP 500 on GET /api/projects"):
        ls.projects()


def test_a_500_on_a_projects_tasks_is_never_read_as_a_deleted_project(failing_server):
    # a deleted project is skipped (its tasks then count as deleted in the tool); a failing server is not
    with pytest.raises(ReviewServerFailing):
        read.live_tasks(LabelStudio(failing_server, "t"), [7])


def test_nothing_listening_is_not_reachable():
    ls = LabelStudio(f"http://127.0.0.1:{_closed_port()}", "t", timeout=2)
    with pytest.raises(ReviewServerDown) as exc:
        ls.ensure_up()
    assert not isinstance(exc.value, ReviewServerFailing)
    assert "not reachable" in str(exc.value) and "make review" in str(exc.value)
    assert ls.probe() is None


def test_a_4xx_keeps_its_status():
    err = ReviewAPIError("GET /api/projects/3: HTTP 404: gone", 404)
    assert err.status == 404


def _ledger(instance: str) -> pd.DataFrame:
    row = {"benchmark": "maia", "kind": "review", "item_id": "m1", "revision": "r", "task_key": "m1"}
    row |= {"project_id": 1, "project_title": "MAIA review · maia", "task_id": 1, "event": "created"}
    row |= {"recorded_at": pd.Timestamp.now(tz="UTC"), "instance": instance, "task_uid": "a" * 32}
    return pd.DataFrame([row], columns=ledger.LEDGER_COLUMNS)


def test_database_replaced_is_told_apart_from_tasks_deleted_in_the_tool():
    old, new = ident.new_id(), ident.new_id()
    assert ledger.instance_state(_ledger(old), {old}) == ("same", old)
    assert ledger.instance_state(_ledger(old), {new}) == ("replaced", old)
    assert ledger.instance_state(_ledger(""), {new}) == ("new", "")  # tasks from before identities
    lost = pd.concat([_ledger(old), _ledger(old).assign(event="lost")], ignore_index=True)
    assert ledger.instance_state(lost, {new}) == ("new", "")  # once recorded lost, the catalog agrees again
