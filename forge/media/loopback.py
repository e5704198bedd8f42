"""A tiny HTTP server on 127.0.0.1 that serves the sample corpus' ``web/`` folder.

It lets the demo and the tests run the real yt-dlp download path (generic extractor,
HTTP downloader, HTML5 ``<video>``/``<track>`` parsing) with no internet. Any path that
is not a file answers 404, which is how the URL list gets its dead link.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass

    def parse_request(self) -> bool:
        ok = super().parse_request()
        if ok:
            self.server.requests.append(self.path)  # type: ignore[attr-defined]
        return ok


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[str]  # every request path, in order (tests check what was fetched)

    def handle_error(self, request: object, client_address: object) -> None:
        # yt-dlp's metadata pass hangs up after reading the head of a file: not an error.
        import sys

        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class LoopbackServer:
    def __init__(self, root: str | Path, host: str = "127.0.0.1", port: int = 0):
        handler = partial(_QuietHandler, directory=str(Path(root).resolve()))
        self.httpd = _Server((host, port), handler)
        self.httpd.requests = []
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="loopback-http", daemon=True)

    @property
    def requests(self) -> list[str]:
        return self.httpd.requests

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> LoopbackServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@contextmanager
def serve(root: str | Path) -> Iterator[LoopbackServer]:
    server = LoopbackServer(root).start()
    try:
        yield server
    finally:
        server.stop()


def loopback_allowances(variables: list[str], env: dict[str, str] | None = None) -> dict[str, str]:
    """``SUBTEXT_ALLOWED_HOSTS`` / ``SUBTEXT_ALLOWED_VARIABLES`` extended for the sample corpus:
    the ingest policy refuses loopback addresses and non-``SUBTEXT_*`` variables by default
    (docs/security.md), so the demo names its server's address and its placeholders."""
    env = dict(os.environ) if env is None else env

    def merged(key: str, extra: list[str]) -> str:
        have = [x.strip() for x in env.get(key, "").split(",") if x.strip()]
        return ",".join(dict.fromkeys([*have, *extra]))

    return {
        "SUBTEXT_ALLOWED_HOSTS": merged("SUBTEXT_ALLOWED_HOSTS", ["127.0.0.1"]),
        "SUBTEXT_ALLOWED_VARIABLES": merged("SUBTEXT_ALLOWED_VARIABLES", variables),
    }
