"""The review server starts with the project's one table of opt-outs (forge.models.offline_env), forced
over whatever the operator's environment carries: no analytics, no version check, and Sentry
empty under both spellings Label Studio and sentry_sdk read."""

from __future__ import annotations

from pathlib import Path

from forge.models import offline_env
from forge.people import server as review_server

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
