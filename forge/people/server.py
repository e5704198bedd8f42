"""Start Label Studio from its own environment (``.venv-review``, ``scripts/ensure_review.sh``).

``python -m forge.people.server [--data-dir DIR] [--port N] [--blind-port M]`` (what ``make
review`` runs) starts two instances in the foreground on 127.0.0.1, side by side: the review
instance (SQLite under ``<data dir>/review``) and the blind baseline's own instance (SQLite under
``<data dir>/review/blind-studio``, ``forge.people.blind_room``; default port the review port
+ 1). Each gets its admin user and API token without prompts, serves its media through
local-files storage, and turns off everything that would reach the internet (analytics, version
check, Sentry). Their folders are the owner's only (0700, files 0600: the SQLite holds the admin
token and every annotation); a served folder holds regular files only (``links``). Ctrl-C stops
both. Tests call ``start()`` / ``start_both()`` and stop the processes they started.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TextIO

from forge.models.offline_env import OFFLINE_ENV
from forge.people.blind_room import blind_server
from forge.people.client import LabelStudio
from forge.people.config import CREDENTIALS, Server, server
from forge.people.links import WATCH_S, refuse_links

ROOT = Path(__file__).resolve().parents[2]
VENV = Path(os.environ.get("SUBTEXT_REVIEW_VENV") or ROOT / ".venv-review")
# Not an opt-out (those are forge.models.offline_env.OFFLINE_ENV, the project's one table): reviewers
# join by invite only.
SERVER_ENV = {"LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK": "true"}
# scripts/ensure_review.sh: the installed Label Studio's migrated empty database (seed_database)
EMPTY_DATABASE = VENV / "empty-database" / "label_studio.sqlite3"
PRIVATE_DIR, PRIVATE_FILE = 0o700, 0o600


def executable() -> Path:
    exe = VENV / "bin" / "label-studio"
    if not exe.is_file():
        raise FileNotFoundError(f"{exe} not found: run `bash scripts/ensure_review.sh` (or `make review`) first")
    return exe


def make_private(s: Server) -> None:
    """The instance's folder and Label Studio's data folder in it 0700, every file there 0600 (the
    SQLite holds the admin token and every annotation; ``admin.json`` the credentials). New files
    are private by the server's umask; this covers files made before, and runs again once the
    server is up (Django creates the database)."""
    data = s.home / "label-studio"
    data.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR)
    for d in (s.home, data):
        os.chmod(d, PRIVATE_DIR)
    for f in s.home.iterdir():  # the credentials, the address record, the log, the task-key secret
        if f.is_file() and not f.is_symlink():
            os.chmod(f, PRIVATE_FILE)
    for root, dirs, files in os.walk(data):
        for name in dirs:
            p = os.path.join(root, name)
            if not os.path.islink(p):
                os.chmod(p, PRIVATE_DIR)
        for name in files:
            p = os.path.join(root, name)
            if stat.S_ISREG(os.lstat(p).st_mode):
                os.chmod(p, PRIVATE_FILE)


def _ls_version() -> str:
    found = sorted(VENV.glob("lib/python*/site-packages/label_studio-*.dist-info"))
    return found[-1].name.removesuffix(".dist-info").split("-")[1] if found else ""


def pin_version_info() -> None:
    """``/version`` (public) shows Label Studio's release only. Label Studio asks ``git`` in its own
    package folder for a commit; inside this checkout git found the project's repository, and
    ``/version`` showed the project's commit (and Label Studio wrote it into its ``version_.py``).
    The server's environment stops git at the venv (``GIT_CEILING_DIRECTORIES``); Label Studio then
    reads ``ls-version_.py`` first, written here with the release and no commit, so a
    ``version_.py`` written by an older start shows nothing either."""
    for core in VENV.glob("lib/python*/site-packages/label_studio/core"):
        info = {"message": "", "commit": "", "date": "", "branch": "", "version": _ls_version()}
        text = f"info = {json.dumps(info)}\n# written by forge.people.server: no commit is shown\n"
        f = core / "ls-version_.py"
        try:
            if not f.is_file() or f.read_text() != text:
                f.write_text(text)
        except OSError as exc:  # a read-only install: git stays stopped, an older version_.py may show
            print(f"note: could not write {f} ({exc.__class__.__name__}); /version may show an old commit")


def command(s: Server) -> tuple[list[str], dict[str, str]]:
    """The command line and environment of the server. The command line carries no secret (any
    local user can read it in ``ps``): the admin's credentials, the API token and Django's secret
    key reach Label Studio through its own environment variables (``LABEL_STUDIO_USERNAME`` /
    ``_PASSWORD`` / ``_USER_TOKEN``, ``SECRET_KEY``). ``--internal-host`` is the address the web
    server binds (Label Studio's default is 0.0.0.0; its ``--host`` only names a public URL)."""
    make_private(s)
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
        "GIT_CEILING_DIRECTORIES": str(VENV.resolve()),  # pin_version_info
    }
    return cmd, env


# Ignored and blocked signals survive exec: a server started from a process that ignores or blocks
# SIGTERM / SIGINT (a supervisor, or a test worker after a library blocked them, which cost the
# suite 30-120 s a stop) would never stop. The command runs behind this shim, which resets both
# and execs it in place (same pid); no preexec_fn, which is unsafe beside the start threads.
_DEFAULT_SIGNALS = (
    "import os, signal, sys; s = {signal.SIGTERM, signal.SIGINT}; signal.pthread_sigmask(signal.SIG_UNBLOCK, s); "
    "[signal.signal(x, signal.SIG_DFL) for x in s]; os.execvp(sys.argv[1], sys.argv[1:])"
)


def with_default_signals(cmd: list[str]) -> list[str]:
    """``cmd`` run with SIGTERM and SIGINT at their defaults, whatever this process has."""
    return [sys.executable, "-c", _DEFAULT_SIGNALS, *cmd]


def seed_database(s: Server) -> bool:
    """A new instance's database from the migrated empty one ``scripts/ensure_review.sh`` makes for
    the installed Label Studio (its schema, Django's content types and permissions, no user, no
    project): Label Studio then finds nothing to migrate and skips its ~400 migrations (about 22 s
    of CPU). An existing database is never touched; without the empty one, Label Studio migrates."""
    db = s.home / "label-studio" / "label_studio.sqlite3"
    if db.exists() or not EMPTY_DATABASE.is_file():
        return False
    db.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    tmp = db.with_name(db.name + ".seed")
    shutil.copyfile(EMPTY_DATABASE, tmp)
    os.chmod(tmp, PRIVATE_FILE)
    os.replace(tmp, db)  # whole or absent: a half-copied database is never opened
    return True


def launch(s: Server, out: int | TextIO) -> subprocess.Popen:
    """The server process, with a private umask: every file Label Studio makes is the owner's."""
    s.document_root.mkdir(parents=True, exist_ok=True)  # Label Studio serves nothing from a missing root
    seed_database(s)
    pin_version_info()
    cmd, env = command(s)
    return subprocess.Popen(
        with_default_signals(cmd),
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        umask=0o077,
        cwd=s.home,
    )


def wait_up(s: Server, proc: subprocess.Popen | None, timeout: float) -> None:
    client = LabelStudio(s.url, s.token)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"Label Studio exited with {proc.returncode}; see {s.home / 'server.log'}")
        if client.health():
            make_private(s)  # the database Django just created
            return
        time.sleep(1)
    raise TimeoutError(f"Label Studio did not answer on {s.url}/health within {timeout:.0f}s")


def _log(s: Server, log: Path | None) -> int:
    return os.open(log or s.home / "server.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE)


def start(
    data_dir: Path, timeout: float = 240, log: Path | None = None, blind: bool = False
) -> tuple[subprocess.Popen, Server]:
    """Start one instance (the review one; ``blind``: the blind baseline's) in the background
    (tests); the caller stops the returned process."""
    s = blind_server(data_dir, create=True) if blind else server(data_dir, create=True)
    refuse_links(data_dir)
    fd = _log(s, log)
    try:
        proc = launch(s, fd)  # the child owns the log while it runs
    finally:
        os.close(fd)
    try:
        wait_up(s, proc, timeout)
    except BaseException:
        proc.terminate()
        raise
    return proc, s


def start_both(data_dir: Path, timeout: float = 240) -> list[tuple[subprocess.Popen, Server]]:
    """Both instances in the background, started at once (they boot in parallel): [(process,
    settings)] of the review instance, then the blind one; the caller stops both."""
    review = server(data_dir, create=True)
    blind = blind_server(data_dir, create=True)
    refuse_links(data_dir)
    started: list[tuple[subprocess.Popen, Server]] = []
    try:
        for s in (review, blind):
            fd = _log(s, None)
            try:
                started.append((launch(s, fd), s))
            finally:
                os.close(fd)
        for proc, s in started:
            wait_up(s, proc, timeout)
    except BaseException:
        for proc, _s in started:
            proc.terminate()
        raise
    return started


# Django's access lines ('[...] [django.server::log_message::213] [INFO] "GET /health HTTP/1.1" 200 16'):
# the review assets and the sensor poll every 30 s, so the terminal shows only those that failed.
ACCESS = re.compile(r'django\.server.*"[A-Z]+ \S+ HTTP/[\d.]+" (\d{3}) ')


# Label Studio's tips panel asks its own server for GitHub's live tips on every page view; offline
# that answers 404 by design (nothing reaches the internet), so those lines stay in the log only.
TIPS_404 = re.compile(r'"GET /heidi-tips/?\S* HTTP/[\d.]+" 404 |Not Found: /heidi-tips')


def for_terminal(line: str) -> bool:
    if TIPS_404.search(line):
        return False
    m = ACCESS.search(line)
    return m is None or int(m.group(1)) >= 400


def relay(proc: subprocess.Popen, log: Path, terminal: TextIO, prefix: str = "") -> None:
    """Every line of the server's output into ``log`` (Label Studio logs each line twice: once),
    the ones a person needs to see on ``terminal`` (after ``prefix``: which instance)."""
    last = None
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE)
    with open(fd, "a", encoding="utf-8", errors="replace") as out:
        for raw in proc.stdout or ():
            line = raw.decode("utf-8", errors="replace")
            if line == last:
                continue
            last = line
            out.write(line)
            out.flush()
            if for_terminal(line):
                terminal.write(prefix + line)
                terminal.flush()


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def serve(servers: list[Server], data_dir: Path) -> int:
    """Run every instance in the foreground until Ctrl-C (or one exits: the others are stopped
    too); each log goes to its ``server.log``. The served folders are checked for links every
    ``WATCH_S`` seconds (``links.refuse_links``)."""
    # A session of their own: Ctrl-C reaches this process only, which stops the servers cleanly.
    procs, pumps = [], []
    for s in servers:
        proc = launch(s, subprocess.PIPE)
        tag = "[blind] " if s.home.name == "blind-studio" else ""
        pump = threading.Thread(target=relay, args=(proc, s.home / "server.log", sys.stdout, tag), daemon=True)
        pump.start()
        procs.append(proc)
        pumps.append(pump)
    secured: set[int] = set()
    try:
        while all(p.poll() is None for p in procs):
            time.sleep(WATCH_S)
            for i, s in enumerate(servers):
                if i not in secured and LabelStudio(s.url, s.token).health():
                    make_private(s)  # the database Django created
                    secured.add(i)
            refuse_links(data_dir)
        code = next(p.returncode for p in procs if p.poll() is not None)
        _stop(procs)
        return code
    except KeyboardInterrupt:
        _stop(procs)
        for pump in pumps:
            pump.join(timeout=5)
        for s in servers:
            print(
                f"\nLabel Studio stopped (log: {s.home / 'server.log'}); annotations are kept in {s.home / 'label-studio'}."
            )
        return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Start Label Studio for human review (docs/review.md)")
    ap.add_argument("--data-dir", default=os.environ.get("SUBTEXT_DATA_DIR", "data"))
    ap.add_argument("--port", type=int, default=None)
    ap.add_argument("--blind-port", type=int, default=None, help="the blind baseline's instance (default: port + 1)")
    args = ap.parse_args(argv)
    if args.port:
        os.environ["SUBTEXT_REVIEW_PORT"] = str(args.port)
    if args.blind_port:
        os.environ["SUBTEXT_REVIEW_BLIND_PORT"] = str(args.blind_port)
    data = Path(args.data_dir)
    s = server(data, create=True)
    b = blind_server(data, create=True)
    for r in refuse_links(data):
        print(f"Refused in a served folder: {r.path} ({r.reason}: {r.detail}); moved to {r.moved_to or '(removed)'}")
    print(f"Label Studio (review) on {s.url}  (log in as {s.username}; password and API token: {s.home / CREDENTIALS})")
    print(f"Label Studio (blind baseline) on {b.url}  (log in as {b.username}; credentials: {b.home / CREDENTIALS})")
    print("Invite reviewers to the first only, blind-baseline participants to the second only (docs/review.md).")
    print(f"Listening on {s.host} only; the full logs are each instance's server.log. Ctrl-C stops both.")
    print("Then: make ui; the review sensor pushes tasks and records verdicts (docs/review.md).")
    sys.stdout.flush()
    return serve([s, b], data)


if __name__ == "__main__":
    raise SystemExit(main())
