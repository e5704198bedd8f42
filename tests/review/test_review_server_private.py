"""The review server is private by default: Label Studio binds 127.0.0.1 only (its own default is
0.0.0.0; `--host` names only a public URL), and no secret (admin password, API token, Django
secret key) is on any command line, where every local user can read it with `ps`."""

from __future__ import annotations

import ipaddress
import subprocess
from pathlib import Path

from forge.people import server as review_server


def listening(port: int) -> list[str]:
    """Local addresses of the TCP sockets listening on ``port`` (``ss -ltn``)."""
    out = subprocess.run(["ss", "-H", "-ltn", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    addrs = []
    for line in out.splitlines():
        local = line.split()[3]  # State Recv-Q Send-Q Local:Port Peer:Port
        addrs.append(local.rsplit(":", 1)[0].strip("[]"))
    return addrs


def test_review_server_listens_on_loopback_only_and_ps_shows_no_secret(ls_server):
    _, ls, srv = ls_server
    assert ls.health()
    addrs = listening(srv.port)
    assert addrs, f"nothing listens on {srv.port}"
    assert all(ipaddress.ip_address(a).is_loopback for a in addrs), addrs
    args = subprocess.run(["ps", "-ww", "-eo", "args"], capture_output=True, text=True, check=True).stdout
    assert f"--port {srv.port}" in args and "label-studio start" in args  # the server is in the list
    for secret in (srv.password, srv.token, srv.secret_key):
        assert secret and secret not in args


def test_command_line_carries_no_secret_and_binds_the_configured_host(tmp_path, monkeypatch):
    monkeypatch.setattr(review_server, "executable", lambda: Path("/bin/true"))
    monkeypatch.setenv("SUBTEXT_REVIEW_TOKEN", "a" * 40)
    monkeypatch.setenv("SUBTEXT_REVIEW_PASSWORD", "pw-for-test-123")
    s = review_server.server(tmp_path, create=True)
    cmd, env = review_server.command(s)
    joined = " ".join(cmd)
    assert s.token not in joined and s.password not in joined and s.secret_key not in joined
    assert cmd[cmd.index("--internal-host") + 1] == "127.0.0.1"
    assert env["LABEL_STUDIO_PASSWORD"] == s.password and env["LABEL_STUDIO_USER_TOKEN"] == s.token
    assert env["SECRET_KEY"] == s.secret_key


def test_terminal_shows_failed_requests_only():
    ok = '[2026-11-27 18:58:25,925] [django.server::log_message::213] [INFO] "GET /health HTTP/1.1" 200 16\n'
    bad = '[2026-11-27 18:58:25,925] [django.server::log_message::213] [WARNING] "GET /api/x HTTP/1.1" 404 17\n'
    assert not review_server.for_terminal(ok)
    assert review_server.for_terminal(bad)
    assert review_server.for_terminal("Starting development server at http://127.0.0.1:8080/\n")
    # the tips panel's request, 404 offline on every page view: expected, kept out of the terminal
    tips = '[2026-11-29 02:40:01,113] [django.server::log_message::213] [WARNING] "GET /heidi-tips/ HTTP/1.1" 404 2\n'
    assert not review_server.for_terminal(tips)
    assert not review_server.for_terminal(
        "[2026-11-29 02:40:01,112] [django.request::log_response::253] [WARNING] Not Found: /heidi-tips/\n"
    )
    assert review_server.for_terminal(bad.replace("/api/x", "/api/tasks/9"))


def test_make_review_records_its_address_for_the_sensors_and_the_cli(tmp_path, monkeypatch):
    """`make review PORT=18080` is enough: the start records where it listens, and every client of
    the data dir (sensors, assets, CLI) finds it there unless SUBTEXT_REVIEW_URL / _PORT say otherwise."""
    from forge.people.config import server

    monkeypatch.delenv("SUBTEXT_REVIEW_URL", raising=False)
    monkeypatch.setenv("SUBTEXT_REVIEW_PORT", "18080")  # what `make review PORT=18080` sets for the server
    started = server(tmp_path, create=True)
    assert started.url == "http://127.0.0.1:18080"
    monkeypatch.delenv("SUBTEXT_REVIEW_PORT")  # `make ui` in another terminal: nothing exported
    assert (server(tmp_path).url, server(tmp_path).port) == ("http://127.0.0.1:18080", 18080)
    monkeypatch.setenv("SUBTEXT_REVIEW_PORT", "9001")  # an explicit setting still wins
    assert server(tmp_path).url == "http://127.0.0.1:9001"
    monkeypatch.delenv("SUBTEXT_REVIEW_PORT")
    monkeypatch.setenv("SUBTEXT_REVIEW_URL", "https://review.example.org")
    assert server(tmp_path).url == "https://review.example.org"
    monkeypatch.delenv("SUBTEXT_REVIEW_URL")
    assert server(tmp_path, create=True).url == "http://127.0.0.1:8080"  # a plain `make review` again
    assert server(tmp_path).url == "http://127.0.0.1:8080"
