"""One result type after the recipes (issue #56, point 3): the splits, gates, export, review and
human-step stages and every kind of people's work return ``forge.storage.result.StageResult``."""

from __future__ import annotations

import typing

import pandas as pd
import pytest

from forge.evals import human, people_kinds
from forge.export import stages as export
from forge.gates import stages as gates
from forge.people.kind import PairSide
from forge.protocol import kind as protocol_kind
from forge.review import kind as review_kind
from forge.review import stages as review
from forge.splits import stages as splits
from forge.storage.result import StageResult

STAGES = [
    splits.compute_splits,
    gates.run_gates,
    export.run_export,
    review.run_review_tasks,
    review.run_verdicts,
    human.run_human_tasks,
    review_kind.push,
    review_kind.read,
    protocol_kind.push,
    protocol_kind.read,
    people_kinds.push_baseline,
    people_kinds.score_baseline,
    people_kinds.push_judge,
    people_kinds.read_judge,
]


@pytest.mark.parametrize("fn", STAGES, ids=lambda f: f"{f.__module__}.{f.__name__}")
def test_every_after_recipe_stage_returns_the_one_result(fn):
    assert typing.get_type_hints(fn)["return"] is StageResult


def test_a_people_side_runs_to_the_one_result():
    hints = typing.get_type_hints(PairSide)
    assert typing.get_args(hints["run"])[-1] is StageResult


def test_frame_is_the_one_part_and_refuses_two():
    df = pd.DataFrame({"a": [1]})
    r = StageResult({"t": {"b": df}, "u": {"b": df, "c": df}})
    assert r.frame("t") is df
    with pytest.raises(ValueError):
        r.frame("u")
    kept = r.only("t")
    assert list(kept.tables) == ["t"] and kept.metadata is r.metadata
