"""The leaderboard ranks rows measured on the same export version only (#43.7: the human
baseline on export v2 was ranked against models scored on v1)."""

from __future__ import annotations

import pandas as pd

import assets.evals.assets  # noqa: F401 - registers the leaderboard view (as the code location does)
from forge.storage import TableStore, open_catalog, refresh_catalog
from forge.storage.contracts import load_contract


def _score(model: str, value: float, version: str) -> dict:
    return {
        "model": model,
        "benchmark": "vague",
        "setting": "VLM",
        "metric": "accuracy",
        "slice": "all",
        "value": value,
        "ci_low": value - 0.1,
        "ci_high": value + 0.1,
        "n": 20,
        "coverage": 1.0,
        "primary": True,
        "export_version": version,
        "split": "test",
        "backend": "openai" if model != "human" else "human",
    }


def test_leaderboard_ranks_within_one_export_version(tmp_path):
    store = TableStore(tmp_path)
    c = load_contract("eval_scores")
    rows = [_score("m-a", 0.6, "v1"), _score("m-b", 0.4, "v1")]
    store.write("eval_scores", c.conform(pd.DataFrame(rows)), "models", schema=c.arrow_schema())
    human = c.conform(pd.DataFrame([_score("human", 0.9, "v2")]))
    store.write("eval_scores", human, "human__vague", schema=c.arrow_schema())
    refresh_catalog(store)
    with open_catalog(store) as con:
        lb = con.sql("select export_version, model, rank from leaderboard").df()
    ranks = {(r.export_version, r.model): r.rank for r in lb.itertuples()}
    assert ranks == {("v1", "m-a"): 1, ("v1", "m-b"): 2, ("v2", "human"): 1}  # never human 1 above m-a 2 on v1
