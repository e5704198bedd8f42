"""A MAIA pool reviewed as one task in real (headless) Chromium (issue #44): the task shows the
question, its 8 answers and 8 pairs with the gold marked and each member's flag where it belongs;
the reviewer corrects answer 3 alone, and only the open question's item gets a new revision.
Screenshot in test-artifacts/review/maia_pool_task.png."""

from __future__ import annotations

import pytest

from forge.benchmarks.registry import get
from forge.review import loop
from forge.review.items import revision
from forge.storage import TableStore
from tests.review import world
from tests.review.test_review_browser import (  # noqa: F401 - browser, browsers: the fixtures
    ARTIFACTS,
    _click_text,
    _login_admin,
    _open_task,
    _press,
    _wait,
    browser,
    browsers,
)
from tests.review.test_review_flow import q
from tests.review.test_review_units import _materialize

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_a_maia_pool_task_in_chromium_shows_its_flags_and_edits_one_answer(review_env, browser):
    from selenium.webdriver.common.by import By

    data, ls, srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 1}\n")
    store = TableStore(data)
    flags = {
        "answer 3": "inconsistent_answer: the answer is about another clip",
        "foil 2": "structural_invalid: not a foil",
    }
    items = world.write_gated(store, "maia", world.maia_pool(store, "q1", flags=flags))
    before = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    _materialize(data, ["maia_review_tasks"])
    project = ls.project_by_title(loop.title(get("maia"), "review"))
    (task,) = ls.tasks(project["id"])

    d = browser
    _login_admin(d, srv)
    _open_task(d, srv.url, int(project["id"]), int(task["id"]))
    body = _wait(lambda: d.find_element(By.TAG_NAME, "body").text)
    for shown in (
        "Why does the cook in q1 leave?",  # the pool's question
        "pair 1 · statement_verification · q1_sv1",  # a block per pair (Label Studio's Repeater)
        "pair 8 · statement_verification · q1_sv8",
        "answer 8 · q1_oe",  # a block per answer
        "✓ GOLD",
        "⚑ answer 3: inconsistent_answer: the answer is about another clip",  # the flag on its member
        "⚑ foil 2: structural_invalid: not a foil",
    ):
        assert shown in body, shown
    fields = d.find_elements(By.CSS_SELECTOR, "textarea[placeholder^='corrected text of this answer only']")
    assert len(fields) == 8
    _click_text(d, "edit")
    fixed = "The cook leaves because the kitchen fills with smoke."
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", fields[2])
    fields[2].send_keys(fixed)
    d.save_screenshot(str(ARTIFACTS / "maia_pool_task.png"))
    _press(d, "Submit")

    _materialize(data, ["maia_review_results"])
    v = q(data, "select item_id, member, verdict, edit_status, reviewer from verdicts order by item_id")
    assert len(v) == 9 and set(v.reviewer) == {srv.username}
    oe = v[v.item_id == "q1_oe"].iloc[0]
    assert (oe.member, oe.verdict, oe.edit_status) == ("answer 3", "edit", "applied")
    assert set(v[v.item_id != "q1_oe"].verdict) == {"accept"}
    status = q(data, "select item_id, revision from review_status where current")
    now = dict(zip(status.item_id, status.revision, strict=True))
    assert [i for i in before if now[i] != before[i]] == ["q1_oe"]
