"""One real Label Studio server for every test that needs it (session-scoped: ``ls_server``), started
from its own environment (.venv-review, installed once per CI run by scripts/ensure_review.sh, which
`make test` calls). Each test starts from an empty tool and an empty data dir's tables
(``review_env``). A plugin of tests/conftest.py, not a conftest of tests/review: a fixture a second
conftest imports is a second fixture, and tests/protocol then started a second server.
"""

from __future__ import annotations

import os
import shutil
import socket
from pathlib import Path

import pytest

from forge.labelstudio import server as review_server
from forge.labelstudio.client import LabelStudio

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def ls_server(tmp_path_factory):
    """(data dir, client, server settings) of a running Label Studio."""
    if not (review_server.VENV / "bin" / "label-studio").is_file():
        pytest.skip(
            f"Label Studio is not installed in {review_server.VENV}: run `bash scripts/ensure_review.sh` "
            "(`make test` does unless SUBTEXT_SKIP_REVIEW_TESTS=1; it needs the package registry once)"
        )
    data = tmp_path_factory.mktemp("review-data")
    old = {k: os.environ.get(k) for k in ("SUBTEXT_REVIEW_PORT", "SUBTEXT_REVIEW_URL")}
    os.environ["SUBTEXT_REVIEW_PORT"] = str(_free_port())
    os.environ.pop("SUBTEXT_REVIEW_URL", None)
    proc, srv = review_server.start(data, timeout=300)
    try:
        yield data, LabelStudio(srv.url, srv.token), srv
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except Exception:  # noqa: BLE001 - a server that ignores SIGTERM is killed (our own pid)
            proc.kill()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def review_env(ls_server, monkeypatch, tmp_path):
    """A clean slate on the shared server: no projects, no tables; review config for the test."""
    data, ls, srv = ls_server
    for p in ls.projects():
        ls.request("DELETE", f"/api/projects/{p['id']}")
    shutil.rmtree(data / "tables", ignore_errors=True)
    shutil.rmtree(data / "exports", ignore_errors=True)
    (data / "catalog.duckdb").unlink(missing_ok=True)
    (data / ".catalog.sha256").unlink(missing_ok=True)
    cfg = tmp_path / "review.yaml"
    monkeypatch.setenv("SUBTEXT_REVIEW_CONFIG", str(cfg))
    monkeypatch.setenv("SUBTEXT_DATA_DIR", str(data))
    monkeypatch.delenv("SUBTEXT_REVIEW_POLICY", raising=False)

    def configure(text: str) -> None:
        cfg.write_text(text)

    configure("benchmarks: {}\n")
    return data, ls, srv, configure
