"""The review server starts with the project's one table of opt-outs (forge.models.offline_env), forced
over whatever the operator's environment carries: no analytics, no version check, and Sentry
empty under both spellings Label Studio and sentry_sdk read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import requests

from forge.models import offline_env
from forge.people import server as review_server
from tests.review import scripted as sr

SENTRY = ("LABEL_STUDIO_SENTRY_DSN", "SENTRY_DSN", "LABEL_STUDIO_FRONTEND_SENTRY_DSN", "FRONTEND_SENTRY_DSN")


def test_server_env_is_the_offline_table_with_sentry_empty_under_every_name(tmp_path, monkeypatch):
    for k in ("SENTRY_DSN", "FRONTEND_SENTRY_DSN", "LABEL_STUDIO_SENTRY_DSN"):
        monkeypatch.setenv(k, "https://key@sentry.example/1")  # inherited: must not reach the tool
    monkeypatch.setenv("LABEL_STUDIO_COLLECT_ANALYTICS", "true")
    monkeypatch.setattr(review_server, "executable", lambda: Path("/bin/true"))
    monkeypatch.setenv("SUBTEXT_REVIEW_TOKEN", "0" * 40)
    monkeypatch.setenv("SUBTEXT_REVIEW_PASSWORD", "pw-for-test")
    cmd, env = review_server.command(review_server.server(tmp_path, create=True))
    assert review_server.OFFLINE_ENV is offline_env.OFFLINE_ENV  # one table, not a second dict
    assert set(SENTRY) <= set(offline_env.OFFLINE_ENV)
    assert {k: env[k] for k in offline_env.OFFLINE_ENV} == offline_env.OFFLINE_ENV
    assert all(env[k] == "" for k in SENTRY)
    assert env["LABEL_STUDIO_COLLECT_ANALYTICS"] == "false" and env["LABEL_STUDIO_LATEST_VERSION_CHECK"] == "false"
    assert env["LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK"] == "true" and cmd[1] == "start"


def _login(url: str, email: str, password: str) -> int:
    """The login form's answer, as a browser posts it: 302 (to the app) when the password is right."""
    s = requests.Session()
    s.get(f"{url}/user/login", timeout=30)  # the CSRF cookie
    form = {"email": email, "password": password, "csrfmiddlewaretoken": s.cookies.get("csrftoken", "")}
    r = s.post(
        f"{url}/user/login", data=form, headers={"Referer": f"{url}/user/login"}, timeout=30, allow_redirects=False
    )
    return r.status_code


def test_the_suites_servers_hash_test_passwords_fast_and_still_check_them(ls_server):
    """tests/labelstudio_settings: the suite's Label Studio stores MD5 hashes (not a million PBKDF2
    rounds per invited reviewer and login), and a wrong password is still refused."""
    _data, ls, srv = ls_server
    person = sr.reviewer(ls, "hasher@forms.example")
    db = srv.home / "label-studio" / "label_studio.sqlite3"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as con:
        (stored,) = con.execute("select password from htx_user where email = ?", (person.email,)).fetchone()
    assert stored.startswith("md5$"), stored[:12]
    assert _login(srv.url, person.email, sr.PASSWORD) == 302
    assert _login(srv.url, person.email, "not-the-password") != 302


def test_the_session_servers_started_from_the_migrated_empty_database(ls_server, ls_blind):
    """scripts/ensure_review.sh made the empty database; both instances were seeded from it, so
    Label Studio found nothing to migrate ("Initializing database.." is its line when it does)."""
    _data, _ls, srv = ls_server
    assert review_server.EMPTY_DATABASE.is_file(), "run `bash scripts/ensure_review.sh`"
    for home in (srv.home, ls_blind[1].home):
        log = (home / "server.log").read_text(errors="replace")
        assert "Starting development server" in log and "Initializing database" not in log, home


def test_seeding_never_touches_an_existing_database_and_needs_the_empty_one(tmp_path, monkeypatch):
    s = review_server.server(tmp_path, create=True)
    template = tmp_path / "empty.sqlite3"
    monkeypatch.setattr(review_server, "EMPTY_DATABASE", template)
    assert not review_server.seed_database(s)  # no empty database: Label Studio migrates by itself
    template.write_bytes(b"schema")
    assert review_server.seed_database(s)
    db = s.home / "label-studio" / "label_studio.sqlite3"
    assert db.read_bytes() == b"schema" and (db.stat().st_mode & 0o777) == 0o600
    db.write_bytes(b"people's work")
    assert not review_server.seed_database(s) and db.read_bytes() == b"people's work"
