"""One real Label Studio server for every test that needs it (session-scoped: ``ls_server``), and the
blind baseline's own instance beside it (``ls_blind``), both started at once as `make review` does,
from their own environment (.venv-review, installed once per CI run by scripts/ensure_review.sh, which
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

from forge.people import server as review_server
from forge.people.client import LabelStudio

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ENV = ("SUBTEXT_REVIEW_PORT", "SUBTEXT_REVIEW_URL", "SUBTEXT_REVIEW_BLIND_PORT", "SUBTEXT_REVIEW_BLIND_URL")
# Label Studio's settings with a fast password hasher for the suite's test users (the module says why);
# every server this worker starts in the session inherits them.
LS_SETTINGS_MODULE = "subtext_test_ls_settings"
LS_SETTINGS_DIR = str(Path(__file__).resolve().parent / "labelstudio_settings")


@pytest.fixture(scope="session")
def ls_servers(tmp_path_factory):
    """(data dir, [(client, server settings)] of the review instance, then the blind one)."""
    if not (review_server.VENV / "bin" / "label-studio").is_file():
        pytest.skip(
            f"Label Studio is not installed in {review_server.VENV}: run `bash scripts/ensure_review.sh` "
            "(`make test` does unless SUBTEXT_SKIP_REVIEW_TESTS=1; it needs the package registry once)"
        )
    data = tmp_path_factory.mktemp("review-data")
    old = {k: os.environ.get(k) for k in (*ENV, "DJANGO_SETTINGS_MODULE", "PYTHONPATH")}
    os.environ["DJANGO_SETTINGS_MODULE"] = LS_SETTINGS_MODULE
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (LS_SETTINGS_DIR, old["PYTHONPATH"]) if p)
    os.environ["SUBTEXT_REVIEW_PORT"] = str(_free_port())
    os.environ["SUBTEXT_REVIEW_BLIND_PORT"] = str(_free_port())
    os.environ.pop("SUBTEXT_REVIEW_URL", None)
    os.environ.pop("SUBTEXT_REVIEW_BLIND_URL", None)
    started = review_server.start_both(data, timeout=300)
    try:
        yield data, [(LabelStudio(srv.url, srv.token), srv) for _proc, srv in started]
    finally:
        procs = [proc for proc, _srv in started]
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except Exception:  # noqa: BLE001 - a server that ignores SIGTERM is killed (our own pid)
                proc.kill()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="session")
def ls_server(ls_servers):
    """(data dir, client, server settings) of the running review instance."""
    data, [(ls, srv), _blind] = ls_servers
    return data, ls, srv


@pytest.fixture(scope="session")
def ls_blind(ls_servers):
    """(client, server settings) of the running blind-baseline instance (same data dir)."""
    _data, [_review, (ls, srv)] = ls_servers
    return ls, srv


@pytest.fixture
def review_env(ls_server, ls_blind, monkeypatch, tmp_path):
    """A clean slate on the shared servers: no projects, no tables; review config for the test."""
    data, ls, srv = ls_server
    for client in (ls, ls_blind[0]):
        for p in client.projects():
            client.request("DELETE", f"/api/projects/{p['id']}")
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
