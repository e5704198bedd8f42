"""The ready queries of each human protocol step (docs/operations.md): the agreement table
(forge/protocol/agreement.py: Fleiss' kappa, equal to statsmodels' on hand-made answers), and the
views of assets/evals/human_steps.py: minutes per unit (the definition of
forge.review.gate.reviewer_minutes) and the share of LLM drafts people changed."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa

import assets.evals.human_steps  # noqa: F401 - registers the views
from forge.protocol.agreement import AGREEMENT, step_agreement
from forge.storage import TableStore, open_catalog, refresh_catalog
from forge.storage.contracts import load_contract

# VAGUE-like rating step: three raters, four units; one refused answer, one excluded rater, a
# control unit, and a rater who changed their mind (the latest answer counts)
RATINGS = {  # unit → ratings of r1, r2, r3
    "u1": (5, 5, 4),
    "u2": (4, 4, 4),
    "u3": (2, 3, 2),
    "u4": (5, 4, 4),
}
KEEP = {"u1": ("yes", "yes", "yes"), "u2": ("yes", "no", "yes"), "u3": ("no", "no", "no"), "u4": ("yes", "yes", "no")}


def _answer(k: int, unit: str, person: str, values: dict | None, minute: int, **kw) -> dict:
    return {
        "benchmark": "vague",
        "step": "rate_direct",
        "answer_id": f"7:{k}",
        "unit_id": unit,
        "task_id": 100 + int(unit[1:]) if unit[1:].isdigit() else 199,
        "person": person,
        "values": json.dumps(values) if values is not None else None,
        "refused": None,
        "control": False,
        "control_correct": None,
        "excluded": None,
        "seconds": 30.0,
        "created_at": pd.Timestamp(f"2026-01-01 00:{minute:02d}", tz="UTC"),
        **kw,
    }


def answers() -> pd.DataFrame:
    rows, k = [], 0
    for unit, rs in RATINGS.items():
        for j, (rating, keep) in enumerate(zip(rs, KEEP[unit], strict=True)):
            k += 1
            rows.append(_answer(k, unit, f"r{j + 1}@x", {"relevance": rating, "keep": keep, "boxes": [{"x": 1}]}, k))
    rows += [
        _answer(90, "u1", "r1@x", {"relevance": 1, "keep": "no"}, 0),  # r1's earlier answer: the latest counts
        _answer(91, "u2", "r4@x", None, 50, refused="relevance: rating_out_of_range (7)"),
        _answer(92, "u3", "r5@x", {"relevance": 1, "keep": "yes"}, 51, excluded="below_control_threshold: 1 of 2"),
        _answer(93, "c1", "r1@x", {"relevance": 5, "keep": "yes"}, 52, control=True, control_correct=True),
        _answer(94, "c1", "r2@x", {"relevance": 1, "keep": "no"}, 53, control=True, control_correct=False),
    ]
    return pd.DataFrame(rows)


def results() -> pd.DataFrame:
    base = {"benchmark": "vague", "step": "rate_direct", "corrects": "vague_direct", "n_refused": 0, "task_id": None}
    rows = [
        {**base, "unit_id": "u1", "decided_by": "human", "changed": True},
        {**base, "unit_id": "u2", "decided_by": "human", "changed": False},
        {**base, "unit_id": "u3", "decided_by": "human", "changed": True},
        {**base, "unit_id": "u4", "decided_by": "human", "changed": False},
        {**base, "unit_id": "u5", "decided_by": "llm", "changed": None, "why_llm": "not_sampled"},
        {**base, "unit_id": "u6", "decided_by": "llm", "changed": None, "why_llm": "not_answered"},
    ]
    for r in rows:
        r.update(keep=True, values="{}", llm_values="{}", people=None, n_answers=3 if r["decided_by"] == "human" else 0)
    return pd.DataFrame(rows)


@pytest.fixture
def catalog(tmp_path):
    store = TableStore(tmp_path)
    tables = {"protocol_answers": answers(), "protocol_results": results(), AGREEMENT: step_agreement(answers())}
    for table, frame in tables.items():
        c = load_contract(table)
        store.write(table, c.conform(frame), "vague__rate_direct", schema=c.arrow_schema())
    refresh_catalog(store)
    with open_catalog(store) as con:
        yield con


def _statsmodels(labels: dict[str, tuple]) -> float:
    cats = sorted({v for vs in labels.values() for v in vs}, key=str)
    return float(fleiss_kappa(np.array([[vs.count(c) for c in cats] for vs in labels.values()]), "fleiss"))


def test_agreement_is_fleiss_kappa_over_counted_answers(catalog):
    got = catalog.execute("select * from protocol_agreement").df().set_index("field")
    assert sorted(got.index) == ["keep", "relevance"]  # a field of boxes has no agreement
    assert (got.units == 4).all() and (got.most_people == 3).all()  # the control unit and c1 left out
    assert got.at["relevance", "fleiss_kappa"] == pytest.approx(_statsmodels(RATINGS), abs=1e-4)
    assert got.at["keep", "fleiss_kappa"] == pytest.approx(_statsmodels(KEEP), abs=1e-4)


def test_minutes_per_unit_and_share_of_drafts_changed(catalog):
    m = catalog.execute("select * from protocol_minutes").df().iloc[0]
    # every minute recorded (17 answers × 30 s, refused, excluded and control ones included) over the
    # 4 units people decide now: gate.reviewer_minutes' definition
    assert (m.answers, m.people, m.minutes, m.units_by_people) == (17, 5, 8.5, 4)
    assert m.minutes_per_unit == pytest.approx(8.5 / 4)
    c = catalog.execute("select * from protocol_changes").df().iloc[0]
    assert (c.units, c.units_by_people, c.drafts_changed, c.units_on_llm_draft) == (6, 4, 2, 2)
    assert c.share_changed == 0.5 and (c.not_sampled, c.not_answered) == (1, 1)
