"""Reviewers in real (headless) Chromium.

* ``test_reviewer_in_chromium``: the admin rejects a MAIA item with a reason, moves a Hummus box
  and accepts it; the verdicts are in the catalog and the moved box is the item's new revision.
* ``test_three_reviewers_in_chromium``: three reviewers invited by link, each logged in as
  themselves. Two get their own annotation of the same MAIA task from the labeling stream; the
  third opens a colleague's annotation in the data manager and changes it, and that change is
  flagged and not counted. A VAGUE answer edited from A to C moves the correct mark (and its
  option type) in the exported item. The blind baseline form shows no gold, option type or
  category, and the answer of a reviewer of that item is kept but not scored.

Screenshots in test-artifacts/review/ (docs/images/ has copies of some)."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from assets.people.factory import people_defs
from forge.benchmarks.registry import get
from forge.export.stages import run_export
from forge.review.stages import resolution
from forge.splits.config import stage_settings
from forge.storage import TableStore
from tests.chromium import chromium
from tests.review import scripted as sr
from tests.review import world
from tests.review.test_review_flow import _export_lines, _resources, materialize, q, run_requests, sensor_tick

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "review"


@pytest.fixture
def browsers():
    """A function that opens one more Chromium (each reviewer has a browser of their own)."""
    if os.environ.get("SUBTEXT_SKIP_BROWSER_TESTS") == "1":
        pytest.skip("SUBTEXT_SKIP_BROWSER_TESTS=1: browser tests skipped on purpose")
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.skip(
            "Debian chromium/chromedriver not installed: `make test` installs them (scripts/ensure_chromium.sh)"
        )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    opened = []

    def new():
        opened.append(chromium())
        return opened[-1]

    yield new
    for d in opened:
        d.quit()


@pytest.fixture
def browser(browsers):
    return browsers()


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


def _buttons(d) -> list[str]:
    from selenium.webdriver.common.by import By

    return [b.text.strip() for b in d.find_elements(By.TAG_NAME, "button") if b.text.strip()]


def _go(d, url: str) -> None:
    """Navigate; a labeling page with a draft may ask before it is left: leave anyway."""
    from selenium.common.exceptions import NoAlertPresentException

    d.get(url)
    try:
        d.switch_to.alert.accept()
    except NoAlertPresentException:
        pass


def _login(d, url: str, email: str, password: str) -> None:
    """Log in as ``email`` in this browser."""
    from selenium.webdriver.common.by import By

    _go(d, url + "/user/login")
    _wait(lambda: d.find_element(By.NAME, "email")).send_keys(email)
    d.find_element(By.NAME, "password").send_keys(password)
    d.find_element(By.CSS_SELECTOR, "button[type=submit], input[type=submit]").click()
    _wait(lambda: "/user/login" not in d.current_url)
    _go(d, url + "/api/current-user/whoami")
    assert json.loads(d.find_element(By.TAG_NAME, "body").text)["email"] == email


# Counts what the page has asked its server: requests answered since the last mark (resource timing,
# its buffer made big enough for Label Studio's pages) and fetch / XHR calls still waiting.
_MARK = """
performance.setResourceTimingBufferSize(100000);
performance.clearResourceTimings();
if (!window.__subtextPending) {
  const p = (window.__subtextPending = {n: 0});
  const f = window.fetch;
  if (f) window.fetch = function () { p.n++; return f.apply(this, arguments).finally(() => { p.n--; }); };
  const send = XMLHttpRequest.prototype.send;
  XMLHttpRequest.prototype.send = function () {
    p.n++;
    this.addEventListener("loadend", () => { p.n--; });
    return send.apply(this, arguments);
  };
}
"""
_COUNT = "return [performance.getEntriesByType('resource').length, (window.__subtextPending || {n: 0}).n]"


def _settle(d, quiet_s: float = 1.0, timeout: float = 20.0) -> None:
    """Until, since the page's last mark, no request is waiting and none was answered for
    ``quiet_s`` (a save, then the next task's loads and drawing; a click the form refuses sends
    none): not a fixed 2-3 s after every click, most of it idle."""
    end, seen, since = time.monotonic() + timeout, None, time.monotonic()
    while time.monotonic() < end:
        done, waiting = d.execute_script(_COUNT)
        now = time.monotonic()
        if (done, waiting) != seen:
            seen, since = (done, waiting), now
        elif waiting == 0 and now - since >= quiet_s:
            return
        time.sleep(0.1)


def _labeling(d, path: str, button: str) -> None:
    """Open a labeling page and wait for its form (and its ``button``: Submit or Update), and for
    the image and its regions, drawn after the buttons (the page's requests quiet)."""
    _go(d, path)
    _wait(lambda: button in _buttons(d))
    d.execute_script(_MARK)
    _settle(d)


def _open_task(d, url: str, project: int, task: int, button: str = "Submit") -> None:
    """The data manager's way: a click on the task (it opens the task's latest annotation)."""
    _labeling(d, f"{url}/projects/{project}/data?task={task}", button)


def _open_stream(d, url: str, project: int) -> None:
    """The labeling stream ("Label All Tasks"): the next task this reviewer has not annotated."""
    _labeling(d, f"{url}/projects/{project}/data?labeling=1", "Submit")


def _type(d, placeholder: str, text: str) -> None:
    from selenium.webdriver.common.by import By

    field = _wait(lambda: d.find_element(By.CSS_SELECTOR, f"textarea[placeholder^='{placeholder}']"))
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", field)
    field.send_keys(text)


def _press(d, label: str) -> None:
    from selenium.webdriver.common.by import By

    d.execute_script(_MARK)
    next(b for b in d.find_elements(By.TAG_NAME, "button") if b.text.strip() == label).click()
    _settle(d, quiet_s=1.5)  # the annotation saved (and the next task loaded), or the form's refusal shown


def _project(ls, prefix: str) -> int:
    """A project by the start of its title (``<Title> <kind> · <name>``, with or without a round)."""
    return int(next(p["id"] for p in ls.projects() if str(p["title"]).startswith(prefix)))


def _login_admin(d, srv) -> None:
    _login(d, srv.url, srv.username, srv.password)


def test_reviewer_in_chromium(review_env, browser):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    data, ls, srv, configure = review_env
    configure("defaults: {policy: required}\n")
    store = TableStore(data)
    world.maia(store, n=1)
    world.hummus(store)
    materialize(data, ["maia_review_tasks", "hummus_review_tasks"])
    maia_p, hum_p = _project(ls, "MAIA review · maia"), _project(ls, "Hummus review · hummus")
    maia_t = ls.tasks(maia_p)[0]
    hum_t = next(t for t in ls.tasks(hum_p) if t["data"]["item_id"] == "h1")

    d = browser
    _login_admin(d, srv)
    _open_task(d, srv.url, maia_p, maia_t["id"])
    _click_text(d, "reject")
    _press(d, "Submit")  # a reject without a reason is not taken: the form asks for one
    assert "A reject needs a reason" in d.find_element(By.TAG_NAME, "body").text
    _click_text(d, "OK")
    _click_text(d, "wrong_gold")
    d.save_screenshot(str(ARTIFACTS / "maia_reject.png"))
    _press(d, "Submit")

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
    _press(d, "Submit")

    run_requests(data, sensor_tick(data, dg.DagsterInstance.ephemeral()))
    v = q(data, "select item_id, reviewer, verdict, reason, edit_status, edits from verdicts order by item_id")
    assert v.item_id.tolist() == ["h1", "m1"] and set(v.reviewer) == {srv.username}
    h1, m1 = v.iloc[0], v.iloc[1]
    assert m1.verdict == "reject" and m1.reason == "wrong_gold"
    assert h1.verdict == "edit" and h1.edit_status == "applied" and '"boxes"' in h1.edits
    assert q(data, "select item_id from rejects where stage = 'human_review'").item_id.tolist() == ["m1"]


def _materialize(data, keys: list[str]) -> None:
    assets = [a for n in ("maia", "vague") for a in people_defs(n, "review").assets] + list(
        people_defs("vague", "human").assets
    )
    dg.materialize(assets, selection=keys, resources=_resources(data))


BLIND_LEAKS = ("GOLD", "Gold answer", "[correct]", "[FS]", "[SU]", "[NE]", "sarcasm", "mcq", "split", "strategy")


def test_three_reviewers_in_chromium(review_env, ls_blind, browsers):
    from selenium.webdriver.common.by import By

    data, ls, srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 2}\n  vague: {reviewers: 1}\n")
    store = TableStore(data)
    world.maia(store, n=1)
    world.vague(store, n=2)
    _materialize(data, ["maia_review_tasks", "vague_review_tasks"])
    maia_p, vague_p = _project(ls, "MAIA review · maia"), _project(ls, "VAGUE review · vague")
    (m1,) = ls.tasks(maia_p)
    r1, r2, r3 = (sr.reviewer(ls, f"{n}@forms.example") for n in ("r1", "r2", "r3"))  # invited by link

    # r1: accepts the MAIA item, and corrects VAGUE v1's options (one per line) and its answer from A to C
    d = browsers()
    _login(d, srv.url, r1.email, sr.PASSWORD)
    _open_stream(d, srv.url, maia_p)
    _click_text(d, "accept")
    _press(d, "Submit")
    _open_stream(d, srv.url, vague_p)
    assert "item v1" in d.find_element(By.TAG_NAME, "body").text  # the stream goes in task order
    _click_text(d, "edit")
    # the options field is multi-line: Enter starts the next option (Shift+Enter would add the text)
    _type(d, "corrected options", "Mop the floor 1\nOpen the window\nSing a song softly\nBuy a hat")
    _type(d, "corrected answer", "C")
    d.save_screenshot(str(ARTIFACTS / "vague_edit.png"))
    _press(d, "Submit")
    _open_stream(d, srv.url, vague_p)
    _click_text(d, "accept")
    _press(d, "Submit")

    # r2: the stream gives the same MAIA task with an annotation of r2's own (Submit, not Update)
    d = browsers()
    _login(d, srv.url, r2.email, sr.PASSWORD)
    _open_stream(d, srv.url, maia_p)
    assert "Update" not in _buttons(d) and "item m1" in d.find_element(By.TAG_NAME, "body").text
    _click_text(d, "reject")
    _click_text(d, "ambiguous")
    d.save_screenshot(str(ARTIFACTS / "maia_reject_own_annotation.png"))
    _press(d, "Submit")

    # r3: clicks the task in the data manager, which opens the latest annotation (r2's), and changes it
    d = browsers()
    _login(d, srv.url, r3.email, sr.PASSWORD)
    _open_task(d, srv.url, maia_p, m1["id"], button="Update")
    _click_text(d, "accept")
    d.save_screenshot(str(ARTIFACTS / "maia_colleague_annotation.png"))
    _press(d, "Update")
    anns = {a["completed_by"]: a for a in ls.annotations(int(m1["id"]))}
    assert set(anns) == {r1.id, r2.id}  # two annotations, each with its author

    _materialize(data, ["maia_review_results", "vague_review_results"])
    v = q(data, "select item_id, reviewer, author, flag, verdict, edit_status from verdicts order by item_id, reviewer")
    maia = v[v.item_id == "m1"].set_index("reviewer")
    assert maia.loc[r1.email, "verdict"] == "accept" and pd.isna(maia.loc[r1.email, "flag"])
    assert maia.loc[r3.email, "author"] == r2.email and maia.loc[r3.email, "flag"].startswith("changed_by_other")
    res = resolution(store, get("maia"), stage_settings(get("maia")).review_settings())
    assert res.status["m1"] == "pending"  # r3's change is not counted: one accept of two, not two

    # the edit moved the correct mark: the export carries C as the gold, correct, and A with C's old type
    edit = v[(v.item_id == "v1")].iloc[0]
    assert edit.verdict == "edit" and edit.edit_status == "applied" and edit.reviewer == r1.email
    spec = get("vague")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    rows = {json.loads(line)["item_id"]: json.loads(line) for line in _export_lines(data, "vague")}
    assert rows["v1"]["answer"] == "C"
    assert rows["v1"]["options"] == ["Mop the floor 1", "Open the window", "Sing a song softly", "Buy a hat"]
    assert rows["v1"]["option_types"] == ["SU", "FS", "correct", "NE"]
    assert rows["v2"]["option_types"] == ["correct", "FS", "SU", "NE"]

    # the blind baseline, on its own instance: r3, invited there too, answers from a form that shows
    # what the model sees, and nothing else
    bls, bsrv = ls_blind
    _materialize(data, ["vague_human_tasks"])
    human_p = _project(bls, "VAGUE blind baseline · vague")
    assert not [p for p in ls.projects() if "baseline" in p["title"]]  # none on the review instance
    tasks = bls.tasks(human_p)
    assert len(tasks) == 2
    for t in tasks:
        assert not {"category", "split", "task", "heading", "answer_text", "context_text"} & set(t["data"])
        assert t["data"]["item_id"] not in ("v1", "v2") and t["data"]["image"].startswith("/data/local-files/?d=vague/")
    b1, _b3 = sr.reviewer(bls, r1.email), sr.reviewer(bls, r3.email)
    _login(d, bsrv.url, r3.email, sr.PASSWORD)
    _open_stream(d, bsrv.url, human_p)
    form = d.find_element(By.CSS_SELECTOR, ".lsf-main-view").text
    assert "Pick the option letter(s)" in form and "Sing a song" in form
    leaks = [x for x in BLIND_LEAKS if x in d.find_element(By.TAG_NAME, "body").text]
    assert not leaks, f"the blind form shows {leaks}"
    d.save_screenshot(str(ARTIFACTS / "human_blind.png"))
    _click_text(d, "C")
    _press(d, "Submit")
    _open_stream(d, bsrv.url, human_p)
    _click_text(d, "A")
    _press(d, "Submit")
    # the same browser, on the review instance, is sent to log in: the blind session opens nothing there
    _go(d, f"{srv.url}/projects/{vague_p}/data")
    _wait(lambda: "/user/login" in d.current_url)
    _go(d, f"{srv.url}/api/projects")
    assert "vague" not in d.find_element(By.TAG_NAME, "body").text.lower()
    # r1 reviewed both items (on the review instance; the same person by e-mail): kept, not scored
    item_of = dict(q(data, "select task_id, item_id from review_tasks where kind = 'human'").itertuples(index=False))
    for t in tasks:
        sr.annotate(b1, {**t, "project": human_p}, [sr.choice("choice", "C")])
    _materialize(data, ["vague_human_results"])
    answers = q(
        data, "select item_id, person, reply, used, excluded_reason from human_answers order by person, item_id"
    )
    assert sorted(answers.item_id) == ["v1", "v1", "v2", "v2"] and set(item_of.values()) == {"v1", "v2"}
    by_r1 = answers[answers.person == r1.email]
    assert not by_r1.used.any() and by_r1.excluded_reason.str.startswith("saw_gold: review").all()
    by_r3 = answers[answers.person == r3.email].set_index("item_id")
    assert by_r3.used.all() and by_r3.excluded_reason.isna().all()
    preds = q(data, f"select item_id, raw_reply from eval_predictions where model = 'human:{r3.email}' order by 1")
    assert preds.raw_reply.tolist() == by_r3.loc[["v1", "v2"], "reply"].tolist()
