"""A paper's behaviour is one ``PaperHooks`` object (issue #56, point 2): the shared methods are
what a paper that does not override them gets, and each paper's hooks are its ``logic/`` modules'
functions (so the gold step's version still hashes the paper's logic/gold.py)."""

from __future__ import annotations

import importlib
import inspect
from dataclasses import replace
from pathlib import Path

import pytest

from forge.benchmarks import registry
from forge.benchmarks.hooks import NAMED_HOOKS, PaperHooks
from forge.evals.requests import EvalRequest, parse_reply


def test_the_shared_methods_are_the_behaviour_of_a_paper_without_its_own():
    h = PaperHooks()
    assert h.parse_reply(None, "A", {}) is None and h.judge_variables({}, {}) is None
    assert h.follow_edit({"answer": "a"}, {"answer": "b"}) == {"answer": "b"} and h.recipe_drops(None) == {}
    assert h.member_check({}, {}, [], None) is None and h.gold_key({"task": "x"}) is None
    assert h.descriptions(None, None) == {} and h.report_plots(None, None, Path(".")) == []
    assert h.report_prediction_tables(None, None) == {} and h.paper_figures(None, Path(".")) is None
    row = {}
    h.read_judgement(row, {"label": " Correct "}, {})
    assert row == {"judge_ok": True, "judge_score": 1.0, "score": 1.0, "correct": True, "judge_verdict": " Correct "}
    with pytest.raises(ValueError, match="judge label"):
        h.read_judgement({}, {"label": "maybe"}, {})
    for name in ("build_request", "score_setting", "parse_release"):
        assert not h.overrides(name)
    with pytest.raises(NotImplementedError):
        h.build_request(None)
    # a human step's and an extra evaluation's hooks, by name: no LLM answer, no control unit, the
    # rows as they are, a control right when every known field matches, judged by that rule
    assert h.step_llm_values("s", {"x": 1}) == {} and h.step_controls("s", {"x": 1}) is None
    rows = object()
    assert h.prepare_step("s", rows, lambda table: None) is rows
    assert h.control_check("s", {"a": 1}, {"a": 1, "b": 2}) and not h.control_check("s", {"a": 1}, {"a": 2})
    assert h.control_judge("s", None, [({"a": 1}, {"a": 1}), ({"a": 1}, {})]) == [(True, "rule"), (False, "rule")]
    for call in (
        lambda: h.step_task_data("s", {}),
        lambda: h.extra_eval_configure("e", {}),
        lambda: h.extra_eval_evaluate("e", None, None, "test", None, 1, 0),
    ):
        with pytest.raises(NotImplementedError):
            call()

    class Own(PaperHooks):
        parse_reply = staticmethod(lambda er, text, options: "mine")

    assert Own().overrides("parse_reply") and not Own().overrides("follow_edit")
    er = EvalRequest.__new__(EvalRequest)
    spec = registry.get("vague")
    assert parse_reply(er, "A", {}, replace(spec, hooks=Own())) == "mine"  # the stage calls the paper's method


@pytest.mark.parametrize("spec", registry.specs(), ids=lambda s: s.name)
def test_each_paper_hooks_are_its_logic_functions(spec):
    hooks = type(spec.hooks)
    own = [n for n in vars(PaperHooks) if not n.startswith("_") and n != "overrides" and spec.hooks.overrides(n)]
    assert {"build_request", "score_setting", "parse_release"} <= set(own)
    for name in set(own) - set(NAMED_HOOKS):
        fn = getattr(hooks, name)
        assert fn.__module__.startswith(f"{spec.package}.logic."), (name, fn.__module__)
        assert getattr(importlib.import_module(fn.__module__), fn.__name__) is fn
    if spec.gold is not None:  # the gold step's version hashes the file that matches
        assert Path(inspect.getsourcefile(spec.hooks.gold_key)).name == "gold.py"


def test_a_paper_review_hooks_are_part_of_the_review_code_version():
    from forge.benchmarks.hooks import review_hooks
    from forge.review.kind import review_kind
    from forge.splits.config import stage_settings

    hummus = registry.get("hummus")
    own = review_hooks(hummus.hooks)
    assert own["follow_edit"] is not None and own["member_check"] is None

    class Other(type(hummus.hooks)):
        follow_edit = staticmethod(lambda original, edited: edited)

    settings = stage_settings(hummus)

    def version(spec):
        return review_kind(spec, settings).code_version

    assert version(replace(hummus, hooks=Other())) != version(hummus)  # another edit rule: a new version
    assert version(replace(hummus, hooks=type(hummus.hooks)())) == version(hummus)  # the same: the same one


@pytest.mark.parametrize("spec", registry.specs(), ids=lambda s: s.name)
def test_a_paper_dispatches_its_named_hooks_by_its_declared_steps(spec):
    """A human step's and an extra evaluation's behaviour are methods of the paper's hooks, by
    name: a paper with human steps shows their forms (``step_task_data``), one with an extra
    evaluation configures it; a name the paper does not declare is an error naming it."""
    hooks = spec.hooks
    own = {n for n in NAMED_HOOKS if hooks.overrides(n)}
    assert ("step_task_data" in own) == bool(spec.human_steps)
    assert {"extra_eval_configure", "extra_eval_evaluate"} <= own or not spec.eval.extra_evals
    # a control judged by the paper's judge has that judge
    assert all(hooks.overrides("control_judge") for s in spec.human_steps if s.control and s.control.judged)
    for name in own:
        fn = getattr(type(hooks), name)
        assert fn.__module__ == f"{spec.package}.hooks", (name, fn.__module__)  # it dispatches to logic/
        args = {
            "step_task_data": ({},),
            "step_llm_values": ({},),
            "step_controls": ({},),
            "prepare_step": (None, lambda table: None),
            "control_check": ({}, {}),
            "control_judge": (None, []),
            "extra_eval_configure": ({},),
            "extra_eval_evaluate": (spec, None, "test", None, 1, 0),
        }[name]
        with pytest.raises(KeyError, match="no (human step|extra evaluation) 'no_such_name'"):
            getattr(hooks, name)("no_such_name", *args)
