"""Start Label Studio from its own environment (``.venv-review``, ``scripts/ensure_review.sh``).

``python -m forge.review.server [--data-dir DIR] [--port N]`` (what ``make review`` runs) starts
it in the foreground on 127.0.0.1 with SQLite under ``<data dir>/review``, creates the admin
user and API token without prompts, serves the data dir's media through local-files storage,
and turns off everything that would reach the internet (analytics, version check, Sentry).
Tests call ``start()`` and stop the process they started.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

from forge.models.offline_env import OFFLINE_ENV
from forge.review.client import LabelStudio
from forge.review.config import Server, server

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("SUBTEXT_REVIEW_VENV") or ROOT / ".venv-review")
# Not an opt-out (those are forge.models.offline_env.OFFLINE_ENV, the project's one table): reviewers
# join by invite only.
SERVER_ENV = {"LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true"}


def executable() -> Path:
    exe = VENV / "bin" / "label-studio"
    if not exe.is_file():
        raise FileNotFoundError(f"{exe} not found: run `bash scripts/ensure_review.sh` (or `make review`) first")
    return exe


def command(s: Server) -> tuple[list[str], dict[str, str]]:
    (s.home / "label-studio").mkdir(parents=True, exist_ok=True)
    cmd = [
        str(executable()),
        "start",
        "--no-browser",
        "--host",
        s.host,
        "--port",
        str(s.port),
        "--data-dir",
        str(s.home / "label-studio"),
        "--username",
        s.username,
        "--password",
        s.password,
        "--user-token",
        s.token,
    ]
    # The opt-outs are forced (not the operator's choice): an inherited SENTRY_DSN or
    # HEARTEX_SENTRY_DSN would otherwise reach the vendor's error reporting.
    env = {
        **os.environ,
        **OFFLINE_ENV,
        **SERVER_ENV,
        "LABEL_STUDIO_LOCAL_FILES_SERVING_ENABLED": "true",
        "LABEL_STUDIO_LOCAL_FILES_DOCUMENT_ROOT": str(s.document_root),
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
        "SECRET_KEY": s.secret_key,
        "LABEL_STUDIO_BASE_DATA_DIR": str(s.home / "label-studio"),
    }
    return cmd, env


def wait_up(s: Server, proc: subprocess.Popen | None, timeout: float) -> None:
    client = LabelStudio(s.url, s.token)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"Label Studio exited with {proc.returncode}; see {s.home / 'server.log'}")
        if client.health():
            return
        time.sleep(1)
    raise TimeoutError(f"Label Studio did not answer on {s.url}/health within {timeout:.0f}s")


def start(data_dir: Path, timeout: float = 240, log: Path | None = None) -> tuple[subprocess.Popen, Server]:
    """Start in the background (tests); the caller stops the returned process."""
    s = server(data_dir, create=True)
    cmd, env = command(s)
    out = open(log or s.home / "server.log", "ab")  # the child owns it while it runs
    proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_up(s, proc, timeout)
    except BaseException:
        proc.terminate()
        raise
    return proc, s


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Start Label Studio for human review (docs/review.md)")
    ap.add_argument("--data-dir", default=os.environ.get("SUBTEXT_DATA_DIR", "data"))
    ap.add_argument("--port", type=int, default=None)
    args = ap.parse_args(argv)
    if args.port:
        os.environ["SUBTEXT_REVIEW_PORT"] = str(args.port)
    s = server(Path(args.data_dir), create=True)
    cmd, env = command(s)
    print(f"Label Studio on {s.url}  (log in as {s.username}; password and API token: {s.home / 'admin.json'})")
    print("Then: materialize <benchmark>_review_tasks (make ui), review, and the review sensor records verdicts.")
    sys.stdout.flush()
    return subprocess.call(cmd, env=env)


if __name__ == "__main__":
    raise SystemExit(main())
