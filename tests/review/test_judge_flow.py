"""The judge checked against people on a real Label Studio (MAIA §4.2: two people and GPT-4o,
Fleiss' kappa 0.82): a sample of the models' judged open-ended MAIA answers is pushed, two people
give the judge's verdict blind to it (each in their own session, through the real API), a third's
empty submit is refused; the kappas equal a hand computation and appear in the eval report's
metadata and on the next export's card. Re-reading adds no row."""

from __future__ import annotations

import json

import dagster as dg
import pandas as pd
import pytest

from assets.evals.assets import build_defs
from assets.people.factory import people_defs
from forge.benchmarks.registry import get
from forge.evals import judge_validation as jv
from forge.export.stages import run_export
from forge.splits.config import stage_settings
from forge.storage import TableStore
from forge.storage.contracts import load_contract
from tests.evals.test_judge_validation import hand_cohen, hand_fleiss
from tests.review import scripted as sr
from tests.review import world
from tests.review.test_review_flow import _resources, q

pytestmark = pytest.mark.slow  # a real Label Studio server

ANSWER = {"m-a": "It rains, so he runs home.", "m-b": "He is late for the bus."}
REFS = [f"He leaves because of the rain ({k})." for k in range(1, 9)]


def maia_open_ended(store: TableStore, n: int) -> pd.DataFrame:
    rows = []
    for i in range(1, n + 1):
        media = world.image(store.data_dir, f"maia_oe_{i}", (40 * i, 120, 80))
        rows.append(
            world.base(
                f"oe{i}",
                "maia",
                media,
                task="open_ended",
                question=f"Why does the person in clip {i} leave?",
                options=None,
                option_types=None,
                answer=REFS[0],
                references=REFS,
                labels=json.dumps({"question_id": f"q_oe{i}"}),
            )
        )
    return world.write_gated(store, "maia", rows)


def judged_predictions(store: TableStore, judge: dict[tuple[str, str], str]) -> None:
    """The models' judged answers as ``<b>_eval`` writes them (judge_json holds the judge's label)."""
    c = load_contract("eval_predictions")
    rows = [
        {
            "model": model,
            "benchmark": "maia",
            "setting": "32_frames",
            "item_id": item,
            "variant": 0,
            "task": "open_ended",
            "split": "test",
            "source_item_id": f"vid_{item}",
            "raw_reply": ANSWER[model],
            "parsed": ANSWER[model],
            "status": "ok",
            "judge_ok": True,
            "judge_json": json.dumps({"label": label}),
            "judge_verdict": label,
            "judge_model": "gpt-judge",
            "detail": "{}",
            "n_images": 32,
            "cached": False,
            "export_version": "v1",
        }
        for (model, item), label in judge.items()
    ]
    for model in ("m-a", "m-b"):
        part = [r for r in rows if r["model"] == model]
        store.write("eval_predictions", c.conform(pd.DataFrame(part)), f"{model}__maia", schema=c.arrow_schema())


def test_the_judge_validated_by_two_people(review_env):
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: advisory}\n")
    store = TableStore(data)
    maia_open_ended(store, 4)
    spec = get("maia")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    C, I = "Correct", "Incorrect"  # noqa: E741 - the judge's labels
    keys = [(m, f"oe{i}") for m in ("m-a", "m-b") for i in range(1, 5)]
    judge = dict(zip(keys, [C, C, I, I, C, I, C, I], strict=True))
    p1 = dict(zip(keys, [C, C, I, C, C, I, C, I], strict=True))
    p2 = dict(zip(keys, [C, I, I, C, C, I, I, I], strict=True))
    judged_predictions(store, judge)

    assets = list(people_defs(spec, "judge").assets)
    dg.materialize(assets, selection=["maia_judge_tasks"], resources=_resources(data))
    project = ls.project_by_title(jv.title(spec))
    assert project is not None and project["maximum_annotations"] == 2
    tasks = {t["data"]["sample_key"]: t for t in ls.tasks(project["id"])}
    of_key = {jv.sample_key(m, "32_frames", i): (m, i) for m, i in keys}
    assert set(tasks) == set(of_key)  # all 8 answers (the sample is 100)
    shown = json.dumps([t["data"] for t in tasks.values()])
    assert "m-a" not in shown and "gpt-judge" not in shown and '"label"' not in shown  # blind to model and judge
    assert all(
        t["data"]["in_answer"] in ANSWER.values() and "R8:" in t["data"]["in_references"] for t in tasks.values()
    )
    again = dg.materialize(assets, selection=["maia_judge_tasks"], resources=_resources(data))
    assert again.asset_materializations_for_node("maia_judge_tasks")[0].metadata["pushed"].value == 0

    for name, labels in (("j1", p1), ("j2", p2)):
        who = sr.reviewer(ls, f"{name}@judge.test")
        for key, t in tasks.items():
            sr.submit(
                ls, t, who, [{**sr.choice(jv.CONTROL, labels[of_key[key]]), "to_name": "instruction"}], seconds=15
            )
    sr.submit(ls, next(iter(tasks.values())), sr.reviewer(ls, "j3@judge.test"), [])  # refused, not counted

    for _ in range(2):  # re-reading never duplicates a row
        dg.materialize(assets, selection=["maia_judge_results"], resources=_resources(data))
    ratings = q(data, "select * from judge_ratings")
    assert len(ratings) == 17 and ratings.refused.notna().sum() == 1
    assert ratings.loc[ratings.person == "j3@judge.test", "refused"].iloc[0].startswith("empty_answer")
    fig = q(data, "select measure, person, value, units, judge_model from judge_agreement").fillna("")
    got = {(r.measure, r.person): r.value for r in fig.itertuples()}
    order = list(keys)
    people = [[p1[k], p2[k]] for k in order]
    assert got[("fleiss_people", "")] == pytest.approx(hand_fleiss(people, [C, I]), abs=1e-4)
    both = [[p1[k], p2[k], judge[k]] for k in order]
    assert got[("fleiss_people_and_judge", "")] == pytest.approx(hand_fleiss(both, [C, I]), abs=1e-4)
    for name, labels in (("j1", p1), ("j2", p2)):
        want = hand_cohen([labels[k] for k in order], [judge[k] for k in order], [C, I])
        assert got[("cohen_person_vs_judge", f"{name}@judge.test")] == pytest.approx(want, abs=1e-4)
    assert set(fig.units) == {8} and set(fig.judge_model) == {"gpt-judge"}

    # the eval report shows them
    report = next(a for a in build_defs(specs=(spec,)).assets if a.key == dg.AssetKey("maia_eval_report"))
    res = dg.materialize([report], selection=["maia_eval_report"], resources=_resources(data))
    md = res.asset_materializations_for_node("maia_eval_report")[0].metadata
    assert f"| fleiss_people_and_judge | – | {got[('fleiss_people_and_judge', '')]:.3g} | 8 | 2 | gpt-judge |" in (
        md["judge_validation"].value
    )
    # the next export's card shows them (one more item makes a new version)
    maia_open_ended(store, 5)
    run_export(store, spec, stage_settings(spec), force_stub=False)
    card = sorted((data / "exports" / "maia").glob("v*"))[-1].joinpath("README.md").read_text()
    fleiss = got[("fleiss_people", "")]
    assert f"| judge validation: Fleiss' kappa between 2 people | {fleiss:.3f} over 8 answers" in card
    assert f"(`gpt-judge`) | {got[('fleiss_people_and_judge', '')]:.3f} |" in card
    assert f"rater 1 {got[('cohen_person_vs_judge', 'j1@judge.test')]:.3f} (n=8)" in card
