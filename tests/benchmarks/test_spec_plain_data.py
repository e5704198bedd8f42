"""Specs hold declared values only (issue #56, point 2): a paper package's files are named by
``BenchmarkSpec.of_package`` before the spec is made (nothing is written into a frozen spec, no
file is read), a package spec made otherwise is refused, enum fields are checked, not rewritten,
and defaults that depend on other fields (a review's consequences) are resolved when asked."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from assets.recipes.vague import spec as vague_spec
from forge.benchmarks.review_spec import DEFAULT_REASONS, Action, Consequence, MemberAnswers, ReviewSpec
from forge.benchmarks.spec import BenchmarkSpec, EvalSpec, YamlFile


def _declared() -> dict:
    """The VAGUE spec's declared fields, as its spec.py passes them (paths unset)."""
    spec = vague_spec.SPEC
    fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
    ev = dataclasses.replace(spec.eval, prompts_dir=None, defaults={})
    return {**fields, "contracts_dir": None, "recipe_config": None, "doc": None, "definitions_module": None, "eval": ev}


def test_of_package_names_the_package_files_and_reads_none():
    spec = BenchmarkSpec.of_package(**_declared())
    home = spec.home
    assert spec.contracts_dir == home / "contracts" and spec.recipe_config == home / "config.yaml"
    assert (
        spec.doc == "assets/recipes/vague/README.md" and spec.definitions_module == "assets.recipes.vague.definitions"
    )
    assert spec.eval.prompts_dir == home / "eval_prompts"
    assert isinstance(spec.eval.defaults, YamlFile) and spec.eval.defaults._doc is None  # read when used
    assert spec == vague_spec.SPEC  # what the package's own spec.py made
    declared = dict(_declared(), recipe_config=home / "other.yaml")  # a declared value stays as declared
    assert BenchmarkSpec.of_package(**declared).recipe_config == home / "other.yaml"


def test_a_package_spec_made_directly_is_refused():
    with pytest.raises(ValueError, match="of_package"):
        BenchmarkSpec(**_declared())


def test_enum_fields_are_checked_not_rewritten():
    assert Consequence(Action.DROP_ITEM).action is Action.DROP_ITEM
    with pytest.raises(ValueError):
        Consequence("drop_everything")
    with pytest.raises(ValueError):
        ReviewSpec(member_answers="sometimes")
    assert ReviewSpec(member_answers=MemberAnswers.REQUIRED).member_answers is MemberAnswers.REQUIRED


def test_eval_defaults_left_alone_when_declared():
    ev = dataclasses.replace(vague_spec.SPEC.eval, prompts_dir=None, defaults={"settings": []})
    spec = BenchmarkSpec.of_package(**dict(_declared(), eval=ev))
    assert spec.eval.defaults == {"settings": []} and isinstance(spec.eval, EvalSpec)


ROOT = Path(__file__).resolve().parents[2]


def writes_into_frozen(text: str) -> list[int]:
    """Lines of a module that write a field of a frozen object (``object.__setattr__``)."""
    return [i for i, line in enumerate(text.splitlines(), 1) if re.search(r"\bobject\.__setattr__\(", line)]


def test_no_spec_writes_into_itself():
    # every module of forge/ and assets/: the benchmark and review specs, the papers' spec.py, the
    # source declarations (forge/media/sources.py) among them
    modules = sorted([*(ROOT / "forge").rglob("*.py"), *(ROOT / "assets").rglob("*.py")])
    assert ROOT / "forge" / "benchmarks" / "review_spec.py" in modules and len(modules) > 100
    found = {str(p.relative_to(ROOT)): writes_into_frozen(p.read_text()) for p in modules}
    assert {path: lines for path, lines in found.items() if lines} == {}
    assert writes_into_frozen("x = 1\n    object.__setattr__(self, 'a', 1)\n") == [2]  # the scan can fail


def test_review_consequences_resolve_when_asked_and_the_spec_keeps_what_was_declared():
    review = ReviewSpec(reasons=(*DEFAULT_REASONS, "blurry_box"))
    assert review.consequences == {}  # declared: none
    in_effect = review.consequences_in_effect()
    assert set(in_effect) == set(review.reasons)
    assert in_effect["bad_media"].action is Action.DROP_SOURCE and in_effect["blurry_box"].action is Action.DROP_ITEM
    assert dataclasses.replace(review, reasons=("bad_media",)).consequences_in_effect() == {
        "bad_media": Consequence(Action.DROP_SOURCE)
    }
    declared = {r: Consequence(Action.DROP_ITEM) for r in review.reasons}
    assert ReviewSpec(reasons=review.reasons, consequences=declared).consequences_in_effect() == declared
