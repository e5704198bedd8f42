"""``prompt_current_<bench>_eval`` counts only its own benchmark's rows of the shared
``eval_predictions`` table: right after a fresh run every check passes."""

from __future__ import annotations

import dagster as dg
import pandas as pd

from assets.evals.assets import build_defs
from assets.llm_support import current_prompt_hashes
from forge.benchmarks import registry
from forge.evals.config import load_eval_config
from forge.evals.pipeline import prompt_files
from forge.storage import TableStore
from resources.storage import StorageResource


def _rows(bench: str, stale: bool = False) -> list[dict]:
    current = current_prompt_hashes(prompt_files(registry.get(bench), load_eval_config()))
    return [
        {"benchmark": bench, "prompt_name": name, "prompt_hash": "0" * 12 if stale else h}
        for name, h in current.items()
    ]


def _run(tmp_path, rows: list[dict], bench: str) -> dg.AssetCheckEvaluation:
    TableStore(tmp_path).write("eval_predictions", pd.DataFrame(rows))
    defs = build_defs(specs=(registry.get(bench),))
    [check] = defs.asset_checks
    result = dg.materialize(
        [check],
        resources={"storage": StorageResource(data_dir=str(tmp_path))},
        selection=dg.AssetSelection.checks(check),
    )
    [ev] = result.get_asset_check_evaluations()
    return ev


def test_other_benchmarks_rows_are_not_outdated(tmp_path):
    ev = _run(tmp_path, _rows("vague") + _rows("maia"), "vague")
    assert ev.passed and ev.metadata["outdated_rows"].value == 0
    assert ev.metadata["rows"].value == len(_rows("vague"))


def test_own_rows_made_with_an_older_prompt_are_counted(tmp_path):
    ev = _run(tmp_path, _rows("vague", stale=True) + _rows("maia"), "vague")
    assert not ev.passed and ev.metadata["outdated_rows"].value == len(_rows("vague"))
