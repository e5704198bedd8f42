"""A reviewer in real (headless) Chromium: logs into Label Studio, rejects a MAIA item with a
reason, moves a Hummus box and accepts it; after a sensor tick the verdicts are in the catalog
and the moved box is the item's new revision. Screenshots in test-artifacts/review/."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import dagster as dg
import pytest

from forge.storage import TableStore
from tests.review import world
from tests.review.test_review_flow import materialize, q, run_requests, sensor_tick

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "review"


@pytest.fixture
def browser():
    if os.environ.get("SUBTEXT_SKIP_BROWSER_TESTS") == "1":
        pytest.skip("SUBTEXT_SKIP_BROWSER_TESTS=1: browser tests skipped on purpose")
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.skip(
            "Debian chromium/chromedriver not installed: `make test` installs them (scripts/ensure_chromium.sh)"
        )
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,1000"):
        opts.add_argument(a)
    d = webdriver.Chrome(service=Service(shutil.which("chromedriver")), options=opts)
    d.set_page_load_timeout(90)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    yield d
    d.quit()


def _wait(fn, timeout: float = 60.0):
    end = time.monotonic() + timeout
    while True:
        try:
            out = fn()
            if out:
                return out
        except Exception:
            if time.monotonic() > end:
                raise
        if time.monotonic() > end:
            raise TimeoutError("the page did not show it in time")
        time.sleep(0.5)


def _click_text(d, text: str) -> None:
    from selenium.webdriver.common.by import By

    el = _wait(lambda: d.find_elements(By.XPATH, f"//*[normalize-space(text())='{text}']")[-1])
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", el)
    time.sleep(0.3)
    el.click()


def _open_task(d, url: str, project: int, task: int) -> None:
    from selenium.webdriver.common.by import By

    d.get(f"{url}/projects/{project}/data?task={task}")
    _wait(lambda: any(b.text.strip() == "Submit" for b in d.find_elements(By.TAG_NAME, "button")))
    time.sleep(2)  # the image and its regions are drawn after the buttons


def _submit(d) -> None:
    from selenium.webdriver.common.by import By

    next(b for b in d.find_elements(By.TAG_NAME, "button") if b.text.strip() == "Submit").click()
    time.sleep(3)


def test_reviewer_in_chromium(review_env, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    data, ls, srv, configure = review_env
    configure("defaults: {policy: required}\n")
    store = TableStore(data)
    world.maia(store, n=1)
    world.hummus(store)
    materialize(data, ["maia_review_tasks", "hummus_review_tasks"])
    projects = {p["title"]: p["id"] for p in ls.projects()}
    maia_p, hum_p = projects["MAIA review · maia v1"], projects["Hummus review · hummus v1"]
    maia_t = ls.tasks(maia_p)[0]
    hum_t = next(t for t in ls.tasks(hum_p) if t["data"]["item_id"] == "h1")

    d = browser
    d.get(srv.url + "/user/login")
    _wait(lambda: d.find_element(By.NAME, "email")).send_keys(srv.username)
    d.find_element(By.NAME, "password").send_keys(srv.password)
    d.find_element(By.CSS_SELECTOR, "button[type=submit], input[type=submit]").click()
    _wait(lambda: "/user/login" not in d.current_url)

    _open_task(d, srv.url, maia_p, maia_t["id"])
    _click_text(d, "reject")
    _click_text(d, "wrong_gold")
    d.save_screenshot(str(ARTIFACTS / "maia_reject.png"))
    _submit(d)

    _open_task(d, srv.url, hum_p, hum_t["id"])
    canvas = max(d.find_elements(By.TAG_NAME, "canvas"), key=lambda e: e.size["width"] * e.size["height"])
    w, h = canvas.size["width"], canvas.size["height"]
    # the box (top 0.1, left 0.2, height 0.3, width 0.4) is pre-drawn: grab its centre, move it
    cx, cy = (0.2 + 0.2) * w - w / 2, (0.1 + 0.15) * h - h / 2
    ActionChains(d).move_to_element_with_offset(canvas, cx, cy).click().pause(0.5).click_and_hold().move_by_offset(
        20, 10
    ).move_by_offset(30, 20).release().perform()
    _click_text(d, "accept")
    d.save_screenshot(str(ARTIFACTS / "hummus_box_moved.png"))
    _submit(d)

    run_requests(data, sensor_tick(data, dg.DagsterInstance.ephemeral()))
    v = q(data, "select item_id, reviewer, verdict, reason, edit_status, edits from verdicts order by item_id")
    assert v.item_id.tolist() == ["h1", "m1"] and set(v.reviewer) == {srv.username}
    h1, m1 = v.iloc[0], v.iloc[1]
    assert m1.verdict == "reject" and m1.reason == "wrong_gold"
    assert h1.verdict == "edit" and h1.edit_status == "applied" and '"boxes"' in h1.edits
    assert q(data, "select item_id from rejects where stage = 'human_review'").item_id.tolist() == ["m1"]
