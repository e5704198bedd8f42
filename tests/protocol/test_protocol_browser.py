"""Protocol steps in real (headless) Chromium, as people do them:

* a rater opens a VAGUE direct expression from the labeling stream under ``after_commit``: the page
  (its text and HTML) shows nothing of the judge's ratings or rationale; they give relevance 2 and
  solvability 4 stars and submit: people decided, and the expression is below the paper's 4; the
  read then makes the second-pass task, where the same rater sees the judge's draft pre-filled;
* a linguist opens a Hummus pair under the opt-in ``suggestion`` mode (LLM-assisted annotation),
  finds the LLM's draft drawn (box, spans, metaphor), draws one more box and submits: the expert's
  annotation, with both boxes, is the pair's, and its row says ``suggestion``.

Screenshots in test-artifacts/protocol/ (docs/images/ has copies)."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from forge.storage import TableStore
from tests.protocol import helpers as h
from tests.recipes.hummus.test_hummus_protocol import _write, llm_annotation
from tests.review import scripted as sr
from tests.review import world
from tests.review.test_review_browser import _login, _open_stream, _press, _project, _wait, browsers  # noqa: F401

pytestmark = [pytest.mark.slow, pytest.mark.browser]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "protocol"


def _vague(data) -> None:
    store = TableStore(data)
    path = world.image(data, "kitchen", (90, 140, 200))
    store.write("vague_candidates", pd.DataFrame([{"frame_id": "fr_kitchen", "image_path": path}]), "b1")
    direct = {
        "frame_id": "fr_kitchen",
        "batch": "b1",
        "direct_expression": "Hey person1, please put away the kettle.",
        "subject": "person1",
        "action": "put away",
        "object": "kettle",
        "intention": "The speaker wants person1 to put away the kettle.",
        "relevance": 5,
        "solvability": 5,
        "judge_rationale": "Clearly doable: the kettle sits on the counter.",
        "model": "gpt-test",
    }
    store.write("vague_direct", pd.DataFrame([direct]), "b1")


def _stars(d) -> list:
    from selenium.webdriver.common.by import By

    return _wait(lambda: [r for r in d.find_elements(By.CSS_SELECTOR, "ul.ant-rate") if r.is_displayed()])


def _full_stars(d) -> list[int]:
    """How many stars each Rating of the page shows filled (a pre-filled draft shows them)."""
    from selenium.webdriver.common.by import By

    return [len(r.find_elements(By.CSS_SELECTOR, "li.ant-rate-star-full")) for r in _stars(d)]


def _click_star(d, rating, n: int) -> None:
    from selenium.webdriver.common.by import By

    star = rating.find_elements(By.CSS_SELECTOR, "li.ant-rate-star")[n - 1]
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", star)
    time.sleep(0.3)
    star.click()


def test_people_rate_and_annotate_in_chromium(review_env, browsers, recipe_overrides):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    data, ls, srv, _configure = review_env
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    _vague(data)
    recipe_overrides("vague", {"protocol": {"direct_rating": {"draft": "after_commit"}}})
    h.materialize(data, "vague", ["vague_direct_rating_tasks"])
    rater = sr.reviewer(ls, "rater@protocol.example")
    d = browsers()  # each person has a browser of their own
    _login(d, srv.url, rater.email, sr.PASSWORD)
    _open_stream(d, srv.url, _project(ls, "VAGUE direct_rating · vague"))
    assert "put away the kettle" in d.find_element(By.TAG_NAME, "body").text
    ratings = _stars(d)
    assert len(ratings) == 2 and _full_stars(d) == [0, 0]  # relevance, solvability: nothing pre-filled
    page = d.page_source
    assert "Clearly doable" not in page and "gpt-test" not in page  # the judge's draft is nowhere in the page
    _click_star(d, ratings[0], 2)  # relevance: 2 stars
    _click_star(d, _stars(d)[1], 4)  # solvability: 4 stars
    d.save_screenshot(str(ARTIFACTS / "vague_direct_rating.png"))
    _press(d, "Submit")
    h.materialize(data, "vague", ["vague_direct_rating_results"])
    res = h.results(data, "vague__direct_rating")["fr_kitchen"]
    assert res["decided_by"] == "human" and res["values"] == {"relevance": 2, "solvability": 4} and not res["keep"]
    assert res["draft_mode"] == "hidden"

    # after the commit: the second pass shows the judge's 5 / 5, pre-filled
    _open_stream(d, srv.url, _project(ls, "VAGUE direct_rating · vague · second pass"))
    assert "put away the kettle" in d.find_element(By.TAG_NAME, "body").text
    _wait(lambda: _full_stars(d) == [5, 5] or None)
    d.save_screenshot(str(ARTIFACTS / "vague_direct_rating_second_pass.png"))

    store = TableStore(data)
    ann, region = llm_annotation(data, "owl")
    _write(store, "hummus_annotations", [ann])
    _write(store, "hummus_regions", [region])
    recipe_overrides("hummus", {"protocol": {"annotation": {"draft": "suggestion"}}})  # LLM-assisted, opt-in
    h.materialize(data, "hummus", ["hummus_annotation_tasks"])
    linguist = sr.reviewer(ls, "linguist@protocol.example")
    d = browsers()
    _login(d, srv.url, linguist.email, sr.PASSWORD)
    _open_stream(d, srv.url, _project(ls, "Hummus annotation · hummus"))
    assert "TIME IS MONEY" in d.find_element(By.TAG_NAME, "body").text  # the draft, as a suggestion
    canvas = max(d.find_elements(By.TAG_NAME, "canvas"), key=lambda e: e.size["width"] * e.size["height"])
    w, hgt = canvas.size["width"], canvas.size["height"]
    # the form's box label (not the region list's), then a drag on the image draws a box
    xpath = "//*[contains(@class, 'lsf-main-view')]//*[normalize-space(text())='region']"
    label = _wait(lambda: d.find_elements(By.XPATH, xpath))[-1]
    d.execute_script("arguments[0].scrollIntoView({block: 'center'}); arguments[0].click()", label)
    time.sleep(0.5)
    canvas = max(d.find_elements(By.TAG_NAME, "canvas"), key=lambda e: e.size["width"] * e.size["height"])
    d.execute_script("arguments[0].scrollIntoView({block: 'center'})", canvas)
    time.sleep(0.5)
    ActionChains(d).move_to_element_with_offset(canvas, int(w * 0.15), int(hgt * 0.1)).click_and_hold().move_by_offset(
        20, 10
    ).move_by_offset(int(w * 0.2), int(hgt * 0.25)).release().perform()
    time.sleep(1)
    d.save_screenshot(str(ARTIFACTS / "hummus_annotation.png"))
    _press(d, "Submit")
    h.materialize(data, "hummus", ["hummus_annotation_results"])
    res = h.results(data, "hummus__annotation")["hma_owl"]
    assert res["decided_by"] == "human" and res["values"]["metaphors"] == "TIME IS MONEY"
    assert len(res["values"]["boxes"]) == 2 and res["changed"]  # the draft's box and the one drawn
    assert res["draft_mode"] == "suggestion"  # the row says the draft shaped it
    assert res["values"]["spans"][0]["text"] == "flies"
