"""Start Label Studio from its own environment (``.venv-review``, ``scripts/ensure_review.sh``).

``python -m forge.labelstudio.server [--data-dir DIR] [--port N]`` (what ``make review`` runs) starts
it in the foreground on 127.0.0.1 with SQLite under ``<data dir>/review``, creates the admin
user and API token without prompts, serves the data dir's media through local-files storage,
and turns off everything that would reach the internet (analytics, version check, Sentry).
Tests call ``start()`` and stop the process they started.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from forge.labelstudio.client import LabelStudio
from forge.labelstudio.config import CREDENTIALS, Server, server
from forge.models.offline_env import OFFLINE_ENV

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
    """The command line and environment of the server. The command line carries no secret (any
    local user can read it in ``ps``): the admin's credentials, the API token and Django's secret
    key reach Label Studio through its own environment variables (``LABEL_STUDIO_USERNAME`` /
    ``_PASSWORD`` / ``_USER_TOKEN``, ``SECRET_KEY``). ``--internal-host`` is the address the web
    server binds (Label Studio's default is 0.0.0.0; its ``--host`` only names a public URL)."""
    (s.home / "label-studio").mkdir(parents=True, exist_ok=True)
    cmd = [
        str(executable()),
        "start",
        "--no-browser",
        "--internal-host",
        s.host,
        "--port",
        str(s.port),
        "--data-dir",
        str(s.home / "label-studio"),
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
        "LABEL_STUDIO_BASE_DATA_DIR": str(s.home / "label-studio"),
        "LABEL_STUDIO_USERNAME": s.username,
        "LABEL_STUDIO_PASSWORD": s.password,
        "LABEL_STUDIO_USER_TOKEN": s.token,
        "SECRET_KEY": s.secret_key,
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


# Django's access lines ('[...] [django.server::log_message::213] [INFO] "GET /health HTTP/1.1" 200 16'):
# the review assets and the sensor poll every 30 s, so the terminal shows only those that failed.
ACCESS = re.compile(r'django\.server.*"[A-Z]+ \S+ HTTP/[\d.]+" (\d{3}) ')


def for_terminal(line: str) -> bool:
    m = ACCESS.search(line)
    return m is None or int(m.group(1)) >= 400


def relay(proc: subprocess.Popen, log: Path, terminal: TextIO) -> None:
    """Every line of the server's output into ``log`` (Label Studio logs each line twice: once),
    the ones a person needs to see on ``terminal``."""
    last = None
    with open(log, "a", encoding="utf-8", errors="replace") as out:
        for raw in proc.stdout or ():
            line = raw.decode("utf-8", errors="replace")
            if line == last:
                continue
            last = line
            out.write(line)
            out.flush()
            if for_terminal(line):
                terminal.write(line)
                terminal.flush()


def serve(s: Server) -> int:
    """Run in the foreground until Ctrl-C (or the server exits); the log goes to server.log."""
    cmd, env = command(s)
    log = s.home / "server.log"
    # A session of its own: Ctrl-C reaches this process only, which stops the server cleanly.
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    pump = threading.Thread(target=relay, args=(proc, log, sys.stdout), daemon=True)
    pump.start()
    try:
        return proc.wait()
    except KeyboardInterrupt:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        pump.join(timeout=5)
        print(f"\nLabel Studio stopped (log: {log}); annotations are kept in {s.home / 'label-studio'}.")
        return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Start Label Studio for human review (docs/review.md)")
    ap.add_argument("--data-dir", default=os.environ.get("SUBTEXT_DATA_DIR", "data"))
    ap.add_argument("--port", type=int, default=None)
    args = ap.parse_args(argv)
    if args.port:
        os.environ["SUBTEXT_REVIEW_PORT"] = str(args.port)
    s = server(Path(args.data_dir), create=True)
    print(f"Label Studio on {s.url}  (log in as {s.username}; password and API token: {s.home / CREDENTIALS})")
    print(f"Listening on {s.host} only; the full log is {s.home / 'server.log'}. Ctrl-C stops it.")
    print("Then: make ui; the review sensor pushes tasks and records verdicts (docs/review.md).")
    sys.stdout.flush()
    return serve(s)


if __name__ == "__main__":
    raise SystemExit(main())
