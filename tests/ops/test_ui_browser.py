"""The Dagster UI, opened in a real headless Chromium against a webserver on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import weakref
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.chromium import chromium

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = pytest.mark.browser


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def _serve(home: Path, data: Path, instance_yaml: str | None = None, env: dict[str, str] | None = None):
    """``dagster-webserver`` on 127.0.0.1 over the instance in ``home`` (the project's dagster.yaml,
    or ``instance_yaml``); yields its URL."""
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        if os.environ.get("SUBTEXT_SKIP_BROWSER_TESTS") == "1":
            pytest.skip("SUBTEXT_SKIP_BROWSER_TESTS=1: browser tests skipped on purpose")
        pytest.fail(
            "Debian chromium/chromedriver not installed: `make test` installs them as root "
            "(scripts/ensure_chromium.sh); set SUBTEXT_SKIP_BROWSER_TESTS=1 to skip on purpose"
        )
    (home / "dagster.yaml").write_text(instance_yaml or (ROOT / ".dagster_home" / "dagster.yaml").read_text())
    port = _free_port()
    env = {**os.environ, **(env or {}), "DAGSTER_HOME": str(home), "SUBTEXT_DATA_DIR": str(data)}
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
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    driver = chromium(window="1600,1000", page_load_timeout=300)
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


# Browsers that have skipped the community dialog once: Dagster's UI keeps that choice in the
# browser's local storage, so it does not come back there and the next pages need no quiet wait.
_SKIPPED: weakref.WeakSet = weakref.WeakSet()


def _dismiss_modals(driver, timeout: float = 20) -> None:
    """The first visit shows a "Join the Dagster community" dialog over the page: skip it.

    It can appear a few seconds after the page renders (later on a loaded machine), so keep
    skipping until the page has been free of it for a moment; in a browser that skipped it
    before, one look (and the loop only if it is there again).
    """
    deadline, quiet_since = time.time() + timeout, None
    while time.time() < deadline:
        buttons = driver.find_elements("xpath", "//button[normalize-space()='Skip' or normalize-space()='Dismiss']")
        for button in buttons:
            try:
                skip = button.text.strip() == "Skip"
                button.click()
                if skip:
                    _SKIPPED.add(driver)
            except Exception:  # noqa: BLE001 - gone between find and click
                pass
        shown = "Join the Dagster community" in driver.find_element("tag name", "body").text
        if buttons or shown:
            quiet_since = None
        elif driver in _SKIPPED:
            return
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


def test_asset_graph_shows_every_group_and_checks(built_ui, browser):
    """The workspace's graph, shown by the one webserver of this file (the small build's: the graph
    and the checks list come from the code, not from what the instance holds)."""
    webserver = built_ui
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


# --- A small build in the UI (tests/ops/ui_world.py): per-partition numbers, pictures, card, leaderboard


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A persistent instance holding a small real build: the image trunk + OCR over three batches,
    a VAGUE export (dataset card) and the II-Bench leaderboard; the true per-batch frame counts."""
    from forge.media.sample_corpus import build_sample_corpus
    from forge.models.weights import easyocr_model_dir
    from forge.storage import TableStore
    from resources.ocr import OCRResource
    from tests.ops.ui_world import build_export, build_ingest, build_leaderboard, open_instance

    root = tmp_path_factory.mktemp("ui_world")
    home = root / "dagster_home"
    instance = open_instance(home)
    corpus = build_sample_corpus(root / "corpus")
    ocr = OCRResource(model_dir=easyocr_model_dir(), gpu=False, max_side=640)
    keys = build_ingest(instance, root / "ingest", corpus.root, ocr)
    store = TableStore(root / "ingest" / "data")
    frames = {k: len(store.read("frames", parts=[k])) for k in keys}
    ocred = {k: len(store.read("text_ratio", parts=[k])) for k in keys}
    export = build_export(instance, root / "export")
    report = build_leaderboard(instance, root / "evals")
    instance.dispose()
    return {"home": home, "frames": frames, "text_ratio": ocred, "export": export, "report": report}


@pytest.fixture(scope="module")
def built_ui(built, tmp_path_factory):
    with _serve(built["home"], tmp_path_factory.mktemp("ui_data")) as url:
        yield url


def _metadata_row(driver, key: str, timeout: float = 90):
    """The row of the metadata table whose key is ``key`` (the page loads it asynchronously)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        rows = driver.find_elements("xpath", f"//tr[td[1][normalize-space(.)='{key}']]")
        if rows:
            return rows[0]
        time.sleep(1)
    body = driver.find_element("tag name", "body").text
    raise AssertionError(f"no metadata row {key!r} after {timeout}s\n--- page text ---\n{body[:3000]}")


def _open_markdown(driver, row):
    """Click the row's "Show Markdown" and return the dialog it opens."""
    row.find_element("xpath", ".//*[contains(text(), 'Show Markdown')]").click()
    deadline = time.time() + 30
    while time.time() < deadline:
        dialogs = driver.find_elements("css selector", "[role=dialog]")
        if dialogs and dialogs[-1].text.strip():  # opened and its markdown rendered
            return dialogs[-1]
        time.sleep(0.5)
    raise AssertionError("the markdown dialog did not open (or stayed empty)")


def _loaded_images(driver, scope) -> list[tuple[str, int]]:
    """(src prefix, natural width) of each image in ``scope`` once loaded; width 0 = broken (a 404)."""
    deadline = time.time() + 30
    while time.time() < deadline:
        state = driver.execute_script(
            "return Array.from(arguments[0].querySelectorAll('img')).map(i => [i.complete, i.src.slice(0, 30), "
            "i.naturalWidth])",
            scope,
        )
        if state and all(done for done, _, _ in state):
            return [(src, w) for _, src, w in state]
        time.sleep(0.5)
    return []


def _close_dialog(driver):
    for button in driver.find_elements("xpath", "//*[@role='dialog']//button[normalize-space()='Close']"):
        button.click()
    time.sleep(0.5)


def test_partitions_show_their_own_row_counts(built, built_ui, browser):
    frames = built["frames"]
    assert len(set(frames.values())) > 1, "the sample corpus must give batches different sizes"
    ARTIFACTS.mkdir(exist_ok=True)
    shown = {}
    for key in frames:
        browser.get(f"{built_ui}/assets/frames?view=partitions&partition={key}")
        row = _metadata_row(browser, "dagster/row_count")
        _dismiss_modals(browser)  # the community dialog shows up a few seconds after the page
        _assert_no_errors(browser.find_element("tag name", "body").text)
        shown[key] = int(row.find_elements("tag name", "td")[1].text.strip().replace(",", ""))
        if key == next(iter(frames)):
            browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", row)
            time.sleep(0.5)
            browser.save_screenshot(str(ARTIFACTS / "ui_partition_row_count.png"))
    # each partition shows its own count (a run-wide copy would show the same number everywhere)
    assert shown == frames


def test_text_ratio_partition_shows_a_contact_sheet_with_ocr_boxes(built, built_ui, browser):
    key = max(built["text_ratio"], key=built["text_ratio"].get)  # the batch with the most OCRed frames
    browser.get(f"{built_ui}/assets/text_ratio?view=partitions&partition={key}")
    _dismiss_modals(browser)
    dialog = _open_markdown(browser, _metadata_row(browser, "contact_sheet"))
    images = _loaded_images(browser, dialog)
    assert len(images) == 1, images  # one sheet: thumbnails and captions in one PNG
    src, width = images[0]
    assert src.startswith("data:image/png") and width > 100
    browser.save_screenshot(str(ARTIFACTS / "ui_contact_sheet_text_ratio.png"))
    _close_dialog(browser)


def test_dataset_card_renders_with_its_plots(built, built_ui, browser):
    browser.get(f"{built_ui}/assets/{built['export']}")
    _dismiss_modals(browser)
    dialog = _open_markdown(browser, _metadata_row(browser, "card"))
    text = dialog.text
    for needle in ("Cost", "estimated, nothing billed", "exports/vague/v1"):
        assert needle in text, f"{needle!r} not on the card\n{text[:2000]}"
    assert "<version>" not in text
    images = _loaded_images(browser, dialog)
    assert len(images) >= 1, "the card shows no plot"
    # every plot is inlined and decodes: a relative path would 404 in the UI (naturalWidth 0)
    assert all(src.startswith("data:image/png") and width > 0 for src, width in images), images
    first = dialog.find_elements("tag name", "img")[0]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", first)
    time.sleep(0.5)
    browser.save_screenshot(str(ARTIFACTS / "ui_dataset_card.png"))
    _close_dialog(browser)


def test_eval_report_shows_the_leaderboard_table(built, built_ui, browser):
    browser.get(f"{built_ui}/assets/{built['report']}")
    _dismiss_modals(browser)
    row = _metadata_row(browser, "primary")
    tables = row.find_elements("tag name", "table")
    if not tables:  # a long table is behind "Show Markdown"
        row = _open_markdown(browser, row)
        tables = row.find_elements("tag name", "table")
    assert tables, "the leaderboard is not rendered as a table"
    text = tables[0].text
    assert "model" in text and "stub-offline" in text and "accuracy" in text, text
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", tables[0])
    time.sleep(0.5)
    browser.save_screenshot(str(ARTIFACTS / "ui_leaderboard.png"))
