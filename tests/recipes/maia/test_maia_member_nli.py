"""A reviewer's edit of a MAIA foil or statement goes through the foil stage's NLI contradiction
test (App. A.7; ``assets/recipes/maia/logic/review.py``), with the backend handed to the gate.

The backend here is a fake ``NLIBackend``: it stands in for the model (cross-encoder weights or
the LLM), which cannot run here; everything else is the real gate on a real gated pool.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
import pytest

from forge.benchmarks.registry import get
from forge.checks.nli import NLIError, NLIResult
from forge.review import gate
from forge.review.items import revision
from forge.review.verdicts import VERDICT_COLUMNS
from forge.storage import TableStore
from tests.review import world

SPEC = get("maia").review
HOOKS = get("maia").hooks  # its member check (logic/review.py)
STATEMENT = "The cook in q1 opens oven number 2."
FOIL = "The cook in q1 opens oven number 9."  # a minimal edit: the other checks pass


class FakeNLI:
    """Answers every pair with one label (or an error, or raises); remembers what it was asked."""

    name = "fake"

    def __init__(self, label: str | None, error: str | None = None, raises: bool = False):
        self.label, self.error, self.raises = label, error, raises
        self.calls: list[tuple[str, str]] = []

    def classify(self, pairs: Sequence[tuple[str, str]], item_ids: Sequence[str] | None = None) -> list[NLIResult]:
        self.calls += list(pairs)
        if self.raises:
            raise NLIError("NLI cross-encoder weights not found at ''")
        ids = list(item_ids or range(len(pairs)))
        return [NLIResult(str(i), self.label, None, "fake", "fake-nli", error=self.error) for i in ids]


def _pool(tmp_path) -> pd.DataFrame:
    store = TableStore(tmp_path)
    return world.write_gated(store, "maia", world.maia_pool(store, "q1"))


def _verdicts(items: pd.DataFrame, iid: str, edit: dict) -> pd.DataFrame:
    rev = {r["item_id"]: revision(r) for r in items.to_dict("records")}[iid]
    at = pd.Timestamp("2026-01-01", tz="UTC")
    row = {
        **dict.fromkeys(VERDICT_COLUMNS),
        "verdict_id": f"1:9:{iid}",
        "item_id": iid,
        "revision": rev,
        "member": "pair 2",
        "project_kind": "review",
        "reviewer": "r1",
        "verdict": "edit",
        "edits": json.dumps(edit),
        "stale": False,
        "created_at": at,
        "updated_at": at,
    }
    return pd.DataFrame([row], columns=VERDICT_COLUMNS)


def _resolve(tmp_path, nli, options=(STATEMENT, FOIL), iid="q1_sv2"):
    items = _pool(tmp_path)
    res = gate.resolve(items, _verdicts(items, iid, {"options": list(options)}), SPEC, tmp_path, nli, HOOKS)
    return items, res


def _unchanged(items: pd.DataFrame, res: gate.Resolution, iid: str) -> bool:
    before = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    after = {r["item_id"]: revision(r) for r in res.items.to_dict("records")}
    return before[iid] == after[iid]


def test_an_edited_foil_the_stage_nli_calls_entailment_is_refused_and_the_original_stays(tmp_path):
    nli = FakeNLI("entailment")
    items, res = _resolve(tmp_path, nli)
    row = res.verdicts.iloc[0]
    assert nli.calls == [(STATEMENT, FOIL)]  # premise the statement, hypothesis the foil (as foils.nli_check)
    assert row.edit_status == "refused" and row.edit_note.startswith("nli_entailment:")
    assert _unchanged(items, res, "q1_sv2")
    assert json.loads(row.edit_nli)["label"] == "entailment"


@pytest.mark.parametrize("label", ["contradiction", "neutral"])
def test_an_edited_foil_that_is_not_entailed_is_applied_with_its_nli_label(tmp_path, label):
    """Contradiction passes; neutral too, by the stage's own rule (App. A.8: neutral foils were valid)."""
    items, res = _resolve(tmp_path, FakeNLI(label))
    row = res.verdicts.iloc[0]
    assert row.edit_status == "applied" and row.edit_note == f"nli: {label} (fake)"
    assert not _unchanged(items, res, "q1_sv2")
    opts = res.items.set_index("item_id").loc["q1_sv2", "options"]
    assert FOIL in list(opts)


@pytest.mark.parametrize(
    ("nli", "why"),
    [
        (FakeNLI(None, error="HTTP 500 from the LLM"), "nli_failed: HTTP 500 from the LLM"),
        (FakeNLI(None, raises=True), "nli_failed: NLIError: NLI cross-encoder weights not found"),
    ],
)
def test_an_nli_failure_refuses_the_edit_with_its_error(tmp_path, nli, why):
    items, res = _resolve(tmp_path, nli)
    row = res.verdicts.iloc[0]
    assert row.edit_status == "refused" and row.edit_note.startswith(why)
    assert _unchanged(items, res, "q1_sv2")


def test_without_a_backend_the_edit_is_kept_and_its_note_says_nli_was_not_run(tmp_path):
    items, res = _resolve(tmp_path, None)
    row = res.verdicts.iloc[0]
    assert row.edit_status == "applied" and row.edit_note.startswith("nli: not run")
    assert pd.isna(row.edit_nli)


def test_the_recorded_nli_result_decides_a_later_resolve_without_a_model(tmp_path):
    """The export gate resolves the stored verdicts with no backend: the verdicts read's NLI result
    (``edit_nli``) decides it alike; a changed edit is not covered by an old result."""
    items, res = _resolve(tmp_path, FakeNLI("entailment"))
    again = gate.resolve(items, res.verdicts, SPEC, tmp_path, hooks=HOOKS)
    assert again.verdicts.iloc[0].edit_status == "refused"
    assert again.verdicts.iloc[0].edit_note.startswith("nli_entailment:")
    assert _unchanged(items, again, "q1_sv2")
    later = FakeNLI("contradiction")  # a re-read with the model does not ask again for the same pair
    assert gate.resolve(items, res.verdicts, SPEC, tmp_path, later, HOOKS).verdicts.iloc[0].edit_status == "refused"
    assert later.calls == []
    other = res.verdicts.assign(edits=json.dumps({"options": [STATEMENT, "The cook in q1 opens oven number 7."]}))
    assert gate.resolve(items, other, SPEC, tmp_path, hooks=HOOKS).verdicts.iloc[0].edit_note.startswith("nli: not run")


def test_an_edited_statement_is_tested_against_its_foil_and_an_answer_edit_asks_no_nli(tmp_path):
    nli = FakeNLI("entailment")
    foil = "The cook in q1 closes oven number 2."  # the pair's foil as built (tests/review/world.py)
    _, res = _resolve(tmp_path, nli, options=("The cook in q1 shuts oven number 2.", foil))
    assert nli.calls == [("The cook in q1 shuts oven number 2.", foil)]
    assert res.verdicts.iloc[0].edit_status == "refused"
    items = _pool(tmp_path)
    refs = list(items.set_index("item_id").loc["q1_oe", "references"])
    refs[2] = "Pool q1: the cook leaves because a different reason entirely."
    res = gate.resolve(items, _verdicts(items, "q1_oe", {"references": refs}), SPEC, tmp_path, FakeNLI("entailment"))
    assert res.verdicts.iloc[0].edit_status == "applied" and pd.isna(res.verdicts.iloc[0].edit_note)


@pytest.mark.slow  # a real Label Studio server
def test_in_label_studio_a_foil_the_llm_nli_calls_entailment_is_refused_and_the_pool_exports_its_original(
    review_env, llm_double, tmp_path, monkeypatch
):
    """A reviewer edits pair 2's foil in the pool's task through Label Studio's API; ``maia_review_results``
    asks the stage's NLI backend (``llm``: the prompt through the LLM engine, here the OpenAI double)
    and refuses the entailed foil; the export carries the original foil, the call is in ``llm_calls``."""
    import dagster as dg

    from assets.people.factory import people_defs
    from forge.export.stages import run_export
    from forge.splits.config import stage_settings
    from forge.storage import open_catalog
    from resources.review import ReviewResource
    from resources.storage import StorageResource
    from tests.llm_double import Reply, double_resource
    from tests.review import scripted as sr
    from tests.review.test_review_units import _exported_pools, _tasks

    monkeypatch.delenv("SUBTEXT_NLI_MODEL", raising=False)
    monkeypatch.setenv("SUBTEXT_NLI_BACKEND", "llm")
    data, ls, _srv, configure = review_env
    configure("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 1}\n")
    store = TableStore(data)
    world.write_gated(store, "maia", world.maia_pool(store, "q1"))
    llm = double_resource(llm_double, str(tmp_path / "llm_cache.sqlite"))
    res = {"storage": StorageResource(data_dir=str(data)), "review": ReviewResource(), "llm": llm}
    defs = list(people_defs("maia", "review").assets)
    dg.materialize(defs, selection=["maia_review_tasks"], resources=res)

    llm_double.script(Reply.json({"label": "entailment"}), match="nli")
    task = _tasks(ls, "review")["unit:q1"]
    r1 = sr.reviewer(ls, "r1@nli.test")
    options = {"from_name": "m_options_2", "to_name": "m_text_2", "type": "textarea", "value": {"text": []}}
    options["value"]["text"] = [f"{STATEMENT}\n{FOIL}"]
    sr.submit(ls, task, r1, [sr.choice("verdict", "edit"), options], 60)
    dg.materialize(defs, selection=["maia_review_results"], resources=res)

    with open_catalog(store) as con:
        v = con.execute("select * from verdicts where item_id = 'q1_sv2'").df().iloc[0]
        calls = con.execute("select stage from llm_calls").df()
        status = con.execute("select item_id, status from review_status where current").df()
    assert v.edit_status == "refused" and v.edit_note.startswith("nli_entailment:"), v.edit_note
    assert json.loads(v.edit_nli)["label"] == "entailment"
    assert [b for b in llm_double.chat_requests if FOIL in json.dumps(b)]  # the pair went to the NLI prompt
    assert "maia_review_results_nli" in set(calls["stage"])
    spec = get("maia")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    assert dict(zip(status.item_id, status.status, strict=True))["q1_sv2"] == "refused"  # pending, its edit refused
    assert _exported_pools(data) == {}  # the pool waits whole: no pool goes out with 7 pairs
    gated = store.read("gated_items", parts=["maia"]).set_index("item_id")
    assert FOIL not in list(gated.loc["q1_sv2", "options"])  # the original stays
