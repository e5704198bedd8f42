"""The II-Bench paper report says what it evaluated (forge/evals/paper_report.py, assets/evals/
paper_reports.py): on items imported from the published release, "the published release" with its
version, and a difference from the paper is flagged; on a set this project built, "export v1 of N
items", both sizes beside the published figures, and no flag (the set is not the paper's)."""

from __future__ import annotations

import json

import pandas as pd

from assets.evals.paper_reports import build_paper_report, evaluated
from forge.benchmarks.registry import get
from forge.export.stages import run_export
from forge.splits.config import stage_settings
from forge.storage import TableStore
from tests.review import world
from tests.review.test_human_baselines import iibench_items


def _export(tmp_path, imported: bool) -> TableStore:
    store = TableStore(tmp_path)
    rows = iibench_items(store).to_dict("records")
    if imported:  # as imported items reach the gate: origin and release folded into extra (docs/releases.md)
        release = {"origin": "imported", "release": "iibench", "release_version": "hf-2024-06"}
        rows = [{**r, "extra": json.dumps({**json.loads(r["extra"]), **release})} for r in rows]
        world.write_gated(store, "iibench", rows)
    run_export(store, get("iibench"), stage_settings(get("iibench")), force_stub=False)
    return store


def _scores(value: float) -> pd.DataFrame:
    row = {"model": "GPT-4o", "setting": "none", "metric": "accuracy", "slice": "all", "value": value, "n": 4}
    return pd.DataFrame([{**row, "export_version": "v1", "split": "test", "primary": True, "backend": "openai"}])


def test_the_report_on_the_imported_release_says_so_and_flags_a_difference(tmp_path):
    store = _export(tmp_path, imported=True)
    scores = _scores(0.5)  # 50.0 against the paper's 72.6
    what = evaluated(store.data_dir, get("iibench"), scores)
    assert [e.paper_own for e in what] == [True]
    md = build_paper_report(get("iibench"), scores, None, tmp_path / "report", what)
    assert (
        "Evaluated: the published release `iibench` (version hf-2024-06): export v1 of 4 items (test split)."
        in md["markdown"]
    )
    assert md["cells"]["table3"]["flag"].any() and "⚠" in md["markdown"]


def test_the_report_on_a_built_set_names_export_and_both_sizes_and_flags_nothing(tmp_path):
    store = _export(tmp_path, imported=False)
    scores = _scores(0.5)
    what = evaluated(store.data_dir, get("iibench"), scores)
    md = build_paper_report(get("iibench"), scores, None, tmp_path / "report", what)
    text = md["markdown"]
    assert "Evaluated: export v1 of 4 items (test split), built by this project." in text
    assert "the paper's own set (1,399 items); this set has 4 items" in text
    assert "(paper 72.6, Δ −22.6)" in text  # the figure is there, as context
    assert not any(c["flag"].any() for c in md["cells"].values() if len(c)) and "cell(s) differ" not in text
