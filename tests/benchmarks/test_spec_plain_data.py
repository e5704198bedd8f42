"""Specs hold declared values only (issue #56, point 2): a paper package's files are named by
``BenchmarkSpec.of_package`` before the spec is made (nothing is written into a frozen spec, no
file is read), a package spec made otherwise is refused, enum fields are checked, not rewritten,
defaults that depend on other fields (a review's consequences) are resolved when asked, and a
paper's behaviour is one hooks object (``BenchmarkSpec.hooks``), never a loose callable."""

from __future__ import annotations

import dataclasses
import enum
import functools
import re
import types
from collections.abc import Mapping
from pathlib import Path

import pytest

from assets.recipes.vague import spec as vague_spec
from forge.benchmarks.hooks import PaperHooks
from forge.benchmarks.review_spec import DEFAULT_REASONS, Action, Consequence, MemberAnswers, ReviewSpec
from forge.benchmarks.settings import eval_defaults
from forge.benchmarks.spec import BenchmarkSpec, EvalSpec


def _declared() -> dict:
    """The VAGUE spec's declared fields, as its spec.py passes them (paths unset)."""
    spec = vague_spec.SPEC
    fields = {f.name: getattr(spec, f.name) for f in dataclasses.fields(spec)}
    ev = dataclasses.replace(spec.eval, prompts_dir=None, defaults={}, defaults_file=None)
    return {**fields, "contracts_dir": None, "recipe_config": None, "doc": None, "definitions_module": None, "eval": ev}


def test_of_package_names_the_package_files_and_reads_none():
    spec = BenchmarkSpec.of_package(**_declared())
    home = spec.home
    assert spec.contracts_dir == home / "contracts" and spec.recipe_config == home / "config.yaml"
    assert (
        spec.doc == "assets/recipes/vague/README.md" and spec.definitions_module == "assets.recipes.vague.definitions"
    )
    assert spec.eval.prompts_dir == home / "eval_prompts"
    # the package's evals.yaml is named, not held: the spec has no reader, the settings module reads it
    assert spec.eval.defaults == {} and spec.eval.defaults_file == home / "evals.yaml"
    assert eval_defaults(spec.eval)["settings"]
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
    ev = dataclasses.replace(vague_spec.SPEC.eval, prompts_dir=None, defaults={"settings": []}, defaults_file=None)
    spec = BenchmarkSpec.of_package(**dict(_declared(), eval=ev))
    assert spec.eval.defaults == {"settings": []} and isinstance(spec.eval, EvalSpec)
    assert spec.eval.defaults_file is None and eval_defaults(spec.eval) == {"settings": []}


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


PLAIN = (type(None), bool, int, float, str, Path, enum.Enum, re.Pattern)
CALLABLE = (types.FunctionType, types.BuiltinFunctionType, types.MethodType, functools.partial, type)


def not_plain(value: object, where: str = "spec", hooks_at: str | None = None) -> list[str]:
    """Where a spec holds something other than declared values: plain scalars, paths, enums,
    dicts / lists / tuples / sets of those, nested spec dataclasses; the paper's behaviour is one
    ``PaperHooks`` object at ``hooks_at`` (``<spec>.hooks``), and a function anywhere else is a
    loose callable. A mapping or object that reads, fetches or computes
    when looked into is named."""
    if where == hooks_at:
        return [] if isinstance(value, PaperHooks) else [f"{where}: {type(value).__qualname__} (not PaperHooks)"]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [
            x
            for f in dataclasses.fields(value)
            for x in not_plain(getattr(value, f.name), f"{where}.{f.name}", hooks_at)
        ]
    if type(value) in (dict, types.MappingProxyType):
        return [
            x
            for k, v in value.items()
            for x in not_plain(k, where, hooks_at) + not_plain(v, f"{where}[{k!r}]", hooks_at)
        ]
    if type(value) in (list, tuple, set, frozenset):
        return [x for i, v in enumerate(value) for x in not_plain(v, f"{where}[{i}]", hooks_at)]
    if isinstance(value, PLAIN):
        return []
    if isinstance(value, CALLABLE):
        return [f"{where}: a loose callable ({getattr(value, '__qualname__', type(value).__qualname__)})"]
    return [f"{where}: {type(value).__qualname__}"]


def callable_type(annotation: object) -> bool:
    """A field's annotation names a function type (the specs' annotations are strings)."""
    return "Callable" in str(annotation)


def test_the_spec_types_declare_no_callable_field():
    # the types themselves: a paper's behaviour is a method of its hooks, never a field of a spec
    # (a human step's form, controls and preparation, a control's rule and judge, an extra
    # evaluation's two steps: methods by the step's / evaluation's name)
    from forge.benchmarks import protocol_spec, review_spec, spec

    types_ = [
        t
        for m in (spec, review_spec, protocol_spec)
        for t in vars(m).values()
        if isinstance(t, type) and dataclasses.is_dataclass(t) and t.__module__ == m.__name__
    ]
    assert {"BenchmarkSpec", "HumanStep", "Control", "ExtraEval", "ReviewSpec"} <= {t.__name__ for t in types_}
    assert {(t.__name__, f.name) for t in types_ for f in dataclasses.fields(t) if callable_type(f.type)} == set()
    assert callable_type("Callable[[Mapping[str, Any]], dict] | None") and not callable_type("Mapping[str, float]")


def test_every_registered_spec_holds_declared_values_only():
    from forge.benchmarks import registry

    specs = registry.specs()
    assert len(specs) >= 5
    found = {spec.name: not_plain(spec, spec.name, f"{spec.name}.hooks") for spec in specs}
    assert {name: bad for name, bad in found.items() if bad} == {}
    # the paper's behaviour: one hooks object, a function anywhere else is named
    spec = vague_spec.SPEC
    assert not_plain(dataclasses.replace(spec, card_sections=(print,)), "vague", "vague.hooks") == [
        "vague.card_sections[0]: a loose callable (print)"
    ]
    assert not_plain(dataclasses.replace(spec.eval, kinds={"mcq": len}), "eval") == [
        "eval.kinds['mcq']: a loose callable (len)"
    ]
    assert not_plain(spec.hooks, "vague.review", "vague.hooks") == ["vague.review: VagueHooks"]
    assert not_plain(spec, "vague", "vague.review") == [
        "vague.review: ReviewSpec (not PaperHooks)",
        "vague.hooks: VagueHooks",
    ]

    class LazyFile(Mapping):  # what EvalSpec.defaults held before: a file read when looked into
        def __getitem__(self, k):
            raise KeyError(k)

        def __iter__(self):
            return iter(())

        def __len__(self):
            return 0

    lazy = dataclasses.replace(vague_spec.SPEC.eval, defaults=LazyFile())
    assert not_plain(lazy, "eval") == [
        "eval.defaults: test_every_registered_spec_holds_declared_values_only.<locals>.LazyFile"
    ]
