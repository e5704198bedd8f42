"""A `cli.build` run in the Dagster UI (headless Chromium): listed on its job's Runs page and on
the Timeline, and re-executed from its run page ("Re-execute" → all steps) to a successful run."""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from tests.ops.test_ui_browser import (
    ARTIFACTS,
    _assert_no_errors,
    _dismiss_modals,
    _serve,
    _wait_for_text,
    browser,  # noqa: F401 - the headless Chromium fixture
)

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.browser

# Runs launched from the UI start at once (no daemon in this test): the default coordinator.
INSTANCE = (
    "telemetry: {enabled: false}\n"
    "run_coordinator: {module: dagster._core.run_coordinator, class: DefaultRunCoordinator}\n"
)


@pytest.fixture(scope="module")
def build_run(tmp_path_factory):
    """One `python -m cli.build --select sources` run recorded in a fresh instance."""
    root = tmp_path_factory.mktemp("rerun_ui")
    images, home = root / "data" / "imgs", root / "home"
    images.mkdir(parents=True)
    home.mkdir()
    (home / "dagster.yaml").write_text(INSTANCE)
    for i, colour in enumerate(("red", "green")):
        Image.new("RGB", (64, 48), colour).save(images / f"{i}.png")
    (root / "s.yaml").write_text(f"sources:\n  - {{name: tiny, type: folder, path: '{images}', media: image}}\n")
    env = {"SUBTEXT_SOURCES": str(root / "s.yaml"), "SUBTEXT_DATA_DIR": str(root / "data"), "DAGSTER_HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-m", "cli.build", "--select", "sources"],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    import dagster as dg
    from dagster._core.instance.ref import InstanceRef

    with dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        (run,) = instance.get_runs()
    return root, home, env, run.run_id


def test_a_build_run_shows_on_the_jobs_page_and_re_executes_from_its_run_page(build_run, browser):
    root, home, env, run_id = build_run
    ARTIFACTS.mkdir(exist_ok=True)
    with _serve(home, root / "data", INSTANCE, env) as url:
        browser.get(f"{url}/locations/subtext_forge/jobs/ingest_fanin_job/runs")
        _dismiss_modals(browser)
        body = _wait_for_text(browser, [run_id[:8]])
        _assert_no_errors(body)
        browser.save_screenshot(str(ARTIFACTS / "ui_job_runs.png"))

        browser.get(f"{url}/runs/{run_id}")
        _dismiss_modals(browser)
        _wait_for_text(browser, ["Re-execute", "Success"])
        button = browser.find_element("xpath", "//button[starts-with(normalize-space(), 'Re-execute')]")
        button.click()
        time.sleep(1)
        items = browser.find_elements(
            "xpath", "//*[normalize-space()='All steps' or starts-with(normalize-space(), 'All steps')]"
        )
        if items:
            items[0].click()
        deadline = time.time() + 240
        while time.time() < deadline and run_id in browser.current_url:
            time.sleep(1)
        new_id = re.search(r"/runs/([0-9a-f-]{36})", browser.current_url)
        assert new_id and new_id.group(1) != run_id, browser.current_url
        body = _wait_for_text(browser, ["Success"], timeout=300)
        _assert_no_errors(body)
        browser.save_screenshot(str(ARTIFACTS / "ui_reexecuted_run.png"))

        browser.get(f"{url}/locations/subtext_forge/jobs/ingest_fanin_job/runs")
        _wait_for_text(browser, [run_id[:8], new_id.group(1)[:8]])
        browser.get(f"{url}/overview/timeline")
        _dismiss_modals(browser)
        body = _wait_for_text(browser, ["ingest_fanin_job"])
        _assert_no_errors(body)
        browser.save_screenshot(str(ARTIFACTS / "ui_timeline.png"))
