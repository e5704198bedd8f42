"""The judge checked against people (forge/evals/judge_validation.py): the kappa wrapper against a
hand computation, the rating reader's refusals, the sample, the form, the card and report lines."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from forge.benchmarks.registry import get
from forge.evals import judge_validation as jv
from forge.evals.report import judge_table
from forge.review.card import human_figure_lines

LABELS = ["Correct", "Incorrect"]


def hand_fleiss(table: list[list[str]], cats: list[str]) -> float:
    """Fleiss (1971), as the textbook writes it: rows = subjects, one label per rater."""
    n = len(table[0])
    counts = np.array([[row.count(c) for c in cats] for row in table], dtype=float)
    p_i = ((counts**2).sum(1) - n) / (n * (n - 1))
    p_j = counts.sum(0) / counts.sum()
    pe = (p_j**2).sum()
    return (p_i.mean() - pe) / (1 - pe)


def hand_cohen(a: list[str], b: list[str], cats: list[str]) -> float:
    po = np.mean([x == y for x, y in zip(a, b, strict=True)])
    pe = sum((a.count(c) / len(a)) * (b.count(c) / len(b)) for c in cats)
    return (po - pe) / (1 - pe)


C, I = "Correct", "Incorrect"  # noqa: E741 - the judge's two labels, short
# six answers: the judge's label, person 1's, person 2's
JUDGE = [C, C, I, I, C, I]
P1 = [C, C, I, C, C, I]
P2 = [C, I, I, C, C, I]


def ratings(extra: list[dict] | None = None) -> pd.DataFrame:
    rows = []
    for k, (j, a, b) in enumerate(zip(JUDGE, P1, P2, strict=True)):
        for person, label, minute in (("a@x", a, 1), ("b@x", b, 2)):
            rows.append(
                {
                    "answer_id": f"1:{k}{person[0]}",
                    "sample_key": f"s{k}",
                    "person": person,
                    "label": label,
                    "judge_label": j,
                    "refused": None,
                    "created_at": pd.Timestamp(f"2026-01-01 00:{minute:02d}", tz="UTC"),
                }
            )
    return pd.DataFrame(rows + (extra or []))


def test_kappas_equal_a_hand_computation():
    fig = jv.agreement(ratings(), LABELS, 2)
    assert fig["units"] == 6 and fig["people"] == ["a@x", "b@x"]
    assert fig["fleiss_people"] == pytest.approx(hand_fleiss([[a, b] for a, b in zip(P1, P2)], LABELS), abs=1e-4)
    both = [[a, b, j] for a, b, j in zip(P1, P2, JUDGE)]
    assert fig["fleiss_people_and_judge"] == pytest.approx(hand_fleiss(both, LABELS), abs=1e-4)
    assert fig["cohen"]["a@x"] == {"kappa": pytest.approx(hand_cohen(P1, JUDGE, LABELS), abs=1e-4), "units": 6}
    assert fig["cohen"]["b@x"]["kappa"] == pytest.approx(hand_cohen(P2, JUDGE, LABELS), abs=1e-4)


def test_refused_and_later_ratings_do_not_count():
    extra = [
        {"answer_id": "1:99", "sample_key": "s0", "person": "c@x", "label": None, "judge_label": C,
         "refused": "empty_answer: no verdict chosen", "created_at": pd.Timestamp("2026-01-01", tz="UTC")},
        {"answer_id": "1:98", "sample_key": "s1", "person": "a@x", "label": I, "judge_label": C, "refused": None,
         "created_at": pd.Timestamp("2026-01-02", tz="UTC")},  # a@x again, later: the first one counts
    ]  # fmt: skip
    assert jv.agreement(ratings(extra), LABELS, 2) == jv.agreement(ratings(), LABELS, 2)


def test_too_few_answers_say_why():
    fig = jv.agreement(ratings().head(2), LABELS, 2)
    assert fig["units"] == 1 and "fleiss_people" not in fig and "fewer than two" in fig["note"]


def test_the_reader_refuses_what_is_not_one_label():
    def pick(*v):
        return [{"from_name": jv.CONTROL, "to_name": "instruction", "type": "choices", "value": {"choices": list(v)}}]

    assert jv.read_label(pick("Correct"), LABELS) == ("Correct", None)
    assert jv.read_label([], LABELS)[1].startswith("empty_answer")
    assert jv.read_label(pick("Correct", "Incorrect"), LABELS)[1].startswith("several_choices")
    assert jv.read_label(pick("Maybe"), LABELS)[1].startswith("unknown_choice")
    elsewhere = [{**pick("Correct")[0], "to_name": "in_answer"}]
    assert jv.read_label(elsewhere, LABELS)[1].startswith("unknown_target")  # never read as a label
    assert jv.read_label([*pick("Correct"), {**pick("x")[0], "from_name": "mood"}], LABELS)[1].startswith(
        "unknown_control"
    )


def test_the_form_and_labels_come_from_the_judge_prompt():
    maia = jv.judge_prompt(get("maia"))
    assert jv.labels(maia, "label") == ["Correct", "Incorrect"]
    assert "at least one reference answer" in jv.instruction(maia) and "{{" not in jv.instruction(maia)
    assert jv.labels(jv.judge_prompt(get("vimu")), "verdict") == ["excellent", "good", "partial", "poor", "wrong"]
    xml = jv.label_config(list(maia.variables), ["Correct", "Incorrect"])
    assert 'value="$in_answer"' in xml and '<Choice value="Incorrect"/>' in xml and 'required="true"' in xml
    with pytest.raises(ValueError, match="no enum"):
        jv.labels(maia, "answer")


def test_the_sample_is_seeded_and_leaves_people_and_unjudged_answers_out():
    rows = [
        {"model": m, "setting": "32_frames", "item_id": f"i{k}", "variant": 0, "task": t, "judge_ok": ok,
         "judge_json": json.dumps({"label": C if k % 2 else I})}
        for m in ("m1", "human:p@x") for k in range(30)
        for t, ok in (("open_ended", k != 3),)
    ]  # fmt: skip
    preds = pd.DataFrame(rows)
    s = jv.sample_frame(preds, "label", 10, 0)
    assert len(s) == 10 and set(s.model) == {"m1"} and "i3" not in set(s.item_id)
    assert s.equals(jv.sample_frame(preds.iloc[::-1], "label", 10, 0))
    assert set(s.sample_key) <= set(jv.sample_frame(preds, "label", 20, 0).sample_key)


def test_card_and_report_show_the_figures():
    fig = jv.agreement(ratings(), LABELS, 2)
    rows = jv.agreement_rows(get("maia"), fig, "gpt-4o")
    card = "\n".join(human_figure_lines({"judge": rows.to_dict("records")}))
    assert f"Fleiss' kappa between 2 people | {fig['fleiss_people']:.3f} over 6 answers" in card
    assert f"| {fig['fleiss_people_and_judge']:.3f} |" in card and "a@x" not in card  # people counted, not named
    assert f"rater 1 {fig['cohen']['a@x']['kappa']:.3f} (n=6)" in card
    report = judge_table(rows)
    assert "| fleiss_people_and_judge | – |" in report and "| cohen_person_vs_judge | b@x |" in report
