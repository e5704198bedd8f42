"""MAIA's review unit is headed by the pool's open question, which its spec declares where to read
(``ReviewSpec.unit_question = extra.maia_question``): the shared unit task names no paper."""

from __future__ import annotations

from dataclasses import replace

from forge.benchmarks.registry import get
from forge.review import units
from forge.storage import TableStore
from tests.review import world


def test_the_unit_heading_is_the_question_the_spec_names(tmp_path):
    spec = get("maia").review
    assert spec.unit_question == "extra.maia_question"
    store = TableStore(tmp_path)
    items = world.write_gated(store, "maia", world.maia_pool(store, "q1"))
    ((key, members),) = units.groups(items, spec.unit).items()
    members = sorted(members, key=lambda m: m["task"] != "statement_verification")  # a pair leads the task
    first = members[0]
    assert first["question"] != "Why does the cook in q1 leave?"  # a pair's own prompt
    assert units.unit_task_data(key, members, spec, None)["question"] == "Why does the cook in q1 leave?"
    # without the declaration the heading falls back to the first member's own question
    bare = replace(spec, unit_question=None)
    assert units.unit_task_data(key, members, bare, None)["question"] == first["question"]
