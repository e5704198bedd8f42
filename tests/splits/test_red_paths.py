"""Splits, gates and exports are red when they should be (issue 14, point 7)."""

from __future__ import annotations

from tests.llm_double import Reply
from tests.splits.helpers import make_world
from tests.splits.test_splits_assets import (
    PAPER,
    _check,
    _md,
    _run,
    _specs,
    solver,
    store,  # noqa: F401 (fixture)
)


def test_blind_solver_outage_fails_the_gate(store, llm_double, llm_double_resource):
    """Every blind-solver call fails: the gate reports the failed calls and fails (ERROR) under the floor."""
    make_world(store, _specs(8), benchmark=PAPER)
    llm_double.responder = lambda body: Reply.error(400, "scripted: solver down")
    res = _run(store, llm_double_resource(), select=("splits", "gated"), raise_on_error=False)
    gate = _check(res, "gate_blind_solvability")
    assert not gate.passed and gate.severity.value == "ERROR"
    # every request failed (sampling stops once no answer could change a verdict)
    assert gate.metadata["failed_calls"].value == gate.metadata["requests"].value >= 8 * 2
    assert gate.metadata["coverage"].value == 0.0
    assert _md(res, f"{PAPER}_gated")["blind_failed_calls"].value == gate.metadata["requests"].value


def test_partial_outage_above_the_floor_passes(store, llm_double, llm_double_resource):
    make_world(store, _specs(8), benchmark=PAPER)
    calls = {"n": 0}

    def flaky(body):
        calls["n"] += 1
        return Reply.error(400, "scripted") if calls["n"] % 20 == 0 else solver(body)

    llm_double.responder = flaky
    res = _run(store, llm_double_resource(), select=("splits", "gated"))
    gate = _check(res, "gate_blind_solvability")
    assert 0.9 <= gate.metadata["coverage"].value < 1.0 and gate.severity.value == "WARN"
    assert gate.metadata["failed_calls"].value >= 1


def test_unreadable_table_is_an_error_not_absent(store, tmp_path):
    """A corrupt ``splits`` file must fail the gates, not look like "no splits yet"."""
    from resources.llm import LLMResource

    make_world(store, _specs(8), benchmark=PAPER)
    llm = LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite"))
    assert _run(store, llm, select=("splits",)).success
    store.part_path("splits", PAPER).write_bytes(b"not a parquet file")
    res = _run(store, llm, select=("gated",), raise_on_error=False)
    assert not res.success


def test_failed_length_gate_is_stated_on_the_card(store, llm_double, llm_double_resource):
    specs = _specs(12)
    for s in specs:
        s["options"] = [f"the right reading of picture {s['item_id']}, spelled out at length", "no", "nah", "nope"]
    make_world(store, specs, benchmark=PAPER)
    llm_double.responder = lambda body: {"answer": "D"}
    res = _run(store, llm_double_resource())
    assert not _check(res, "gate_length_bias").passed
    card = (store.data_dir / "exports" / PAPER / "v1" / "README.md").read_text()
    assert "Failed quality gates:** length bias" in card
    assert "length bias" in _md(res, f"{PAPER}_export")["failed_gates"].value[0]
