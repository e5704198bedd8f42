"""The Dagster UI, opened in a real headless Chromium against a webserver on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def webserver(tmp_path_factory):
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        if os.environ.get("SUBTEXT_SKIP_BROWSER_TESTS") == "1":
            pytest.skip("SUBTEXT_SKIP_BROWSER_TESTS=1: browser tests skipped on purpose")
        pytest.fail(
            "Debian chromium/chromedriver not installed: `make test` installs them as root "
            "(scripts/ensure_chromium.sh); set SUBTEXT_SKIP_BROWSER_TESTS=1 to skip on purpose"
        )
    home = tmp_path_factory.mktemp("dagster_home")
    (home / "dagster.yaml").write_text((ROOT / ".dagster_home" / "dagster.yaml").read_text())
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(home), "SUBTEXT_DATA_DIR": str(tmp_path_factory.mktemp("data"))}
    proc = subprocess.Popen(
        [sys.executable, "-m", "dagster_webserver", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 180
    while time.time() < deadline:
        try:
            urllib.request.urlopen(url + "/server_info", timeout=2)
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail("webserver exited:\n" + proc.stdout.read())
            time.sleep(1)
    else:
        proc.kill()
        pytest.fail("webserver did not come up in 180 s")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which("chromium")
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1600,1000",
    ):
        opts.add_argument(flag)
    # An explicit driver path keeps Selenium Manager from trying to download one.
    driver = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    yield driver
    driver.quit()


def _wait_for_text(driver, needles: list[str], timeout: float = 90) -> str:
    deadline = time.time() + timeout
    body = ""
    while time.time() < deadline:
        body = driver.find_element("tag name", "body").text
        if all(n in body for n in needles):
            return body
        time.sleep(1)
    missing = [n for n in needles if n not in body]
    raise AssertionError(f"not shown after {timeout}s: {missing}\n--- page text ---\n{body[:3000]}")


def _dismiss_modals(driver, timeout: float = 20) -> None:
    """The first visit shows a "Join the Dagster community" dialog over the page: skip it.

    It can appear a few seconds after the page renders (later on a loaded machine), so keep
    skipping until the page has been free of it for a moment.
    """
    deadline, quiet_since = time.time() + timeout, None
    while time.time() < deadline:
        buttons = driver.find_elements("xpath", "//button[normalize-space()='Skip' or normalize-space()='Dismiss']")
        for button in buttons:
            try:
                button.click()
            except Exception:  # noqa: BLE001 - gone between find and click
                pass
        if buttons or "Join the Dagster community" in driver.find_element("tag name", "body").text:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.time()
        elif time.time() - quiet_since >= 3:
            return
        time.sleep(0.5)


ERROR_TEXTS = (
    "Unexpected GraphQL error",
    "Something went wrong",
    "could not be loaded",
    "Error loading",
    "failed to load",
)


def _assert_no_errors(body: str) -> None:
    for bad in ERROR_TEXTS:
        assert bad not in body, f"error banner on the page: {bad!r}\n{body[:2000]}"


def _expected_groups_and_checks():
    from definitions import build_defs

    graph = build_defs().resolve_asset_graph()
    groups = sorted({graph.get(k).group_name for k in graph.materializable_asset_keys})
    checks = sorted({c.name for c in graph.asset_check_keys})
    return groups, checks, graph


def test_asset_graph_shows_every_group_and_checks(webserver, browser):
    groups, checks, graph = _expected_groups_and_checks()
    ARTIFACTS.mkdir(exist_ok=True)
    browser.get(webserver + "/asset-groups")  # "Global asset lineage" in 1.13
    _wait_for_text(browser, ["Global asset lineage", *groups])
    _dismiss_modals(browser)
    time.sleep(2)  # let the graph layout settle for the screenshot
    body = _wait_for_text(browser, groups)
    assert "Join the Dagster community" not in body
    _assert_no_errors(body)
    # Every group is a node of the rendered graph (SVG/DOM nodes), not only a sidebar entry.
    for group in groups:
        nodes = browser.find_elements("xpath", f"//*[normalize-space(text())='{group}']")
        assert len(nodes) >= 2, f"group {group} is listed but not drawn in the graph"
    browser.save_screenshot(str(ARTIFACTS / "ui_asset_graph.png"))

    # The checks list of the catalog: each asset's contract checks are shown.
    key_with_checks = sorted(graph.asset_check_keys, key=lambda c: c.asset_key.to_user_string())[0]
    browser.get(f"{webserver}/assets/{key_with_checks.asset_key.to_user_string()}?view=checks")
    own = sorted(c.name for c in graph.asset_check_keys if c.asset_key == key_with_checks.asset_key)
    body = _wait_for_text(browser, ["Checks", *own])
    _dismiss_modals(browser)
    _assert_no_errors(body)
    browser.save_screenshot(str(ARTIFACTS / "ui_asset_checks.png"))
    assert checks  # the project defines asset checks at all
