"""The text-only probe's cost follows what it tells (issue 36.1): it stops sampling a unit once
its verdict is decided, probes one text once per model, reports by default (nothing dropped),
and its accuracy is on every multiple-choice card. Requests are counted at the double."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from forge.benchmarks import registry
from forge.gates import blind
from forge.gates.stages import BLIND_PROMPT, BLIND_STAGE
from forge.llm.prompts import load_prompt
from forge.splits.config import SPLITS_CONFIG, BlindConfig, SplitSizes, benchmark_config
from tests.llm_double.server import message_text
from tests.splits.helpers import make_world
from tests.splits.test_splits_assets import _run, _specs, store  # noqa: F401 (fixture)


def _items(n: int, k: int = 4, same_text: int = 0) -> pd.DataFrame:
    rows = []
    for i in range(n):
        q = "shared question" if i < same_text else f"EASY q{i}" if i % 2 else f"q{i}"
        rows.append(
            {
                "item_id": f"i{i:02d}",
                "question": q,
                "options": [f"opt {j}" for j in range(k)] if i < same_text else [f"opt {j} of {i}" for j in range(k)],
                "answer": "A",
                "labels": None,
            }
        )
    return pd.DataFrame(rows)


def _easy_right(body):
    return {"answer": "A" if "EASY" in message_text(body) else "B"}


def _probe(llm, df, cfg, units=None):
    # The tests below count the requests the double receives: with hedging on, a loaded machine gets
    # a hedged second copy of a slow request (first reply wins), so the resources here turn it off.
    return blind.probe(llm.engine(), BLIND_STAGE, "t", df, load_prompt(BLIND_PROMPT), cfg, units)


def test_early_stop_asks_only_until_the_verdict_is_decided(llm_double, llm_double_resource, tmp_path):
    llm_double.responder = _easy_right
    df = _items(10)
    full = _probe(
        llm_double_resource(hedge=False, cache_path=str(tmp_path / "full.sqlite")), df, BlindConfig(early_stop=False)
    )
    assert len(llm_double.chat_requests) == full.sent == 10 * 5
    n0 = len(llm_double.chat_requests)
    early = _probe(llm_double_resource(hedge=False), df, BlindConfig())
    # EASY items (5): 4 right of 4 → flagged whatever comes; the others: 2 wrong → never flagged
    assert len(llm_double.chat_requests) - n0 == early.sent == 5 * 4 + 5 * 2
    assert early.saved == 50 - 30
    for i, s in early.scores.items():  # the same verdicts as asking every trial
        assert s.flagged == full.scores[i].flagged
    # a re-run probes nothing: every trial is in the engine's cache
    n1 = len(llm_double.chat_requests)
    again = _probe(llm_double_resource(hedge=False), df, BlindConfig())
    assert len(llm_double.chat_requests) == n1 and {i: s.flagged for i, s in again.scores.items()} == {
        i: s.flagged for i, s in early.scores.items()
    }


def test_one_probe_per_text_and_pools_decided_whole(llm_double, llm_double_resource):
    llm_double.responder = _easy_right
    df = _items(6, k=2, same_text=3)  # three items with the same question and options
    p = _probe(llm_double_resource(hedge=False), df, BlindConfig())
    assert p.texts == 4
    shared = [p.scores[f"i0{i}"] for i in range(3)]
    assert len({(s.trials, s.correct) for s in shared}) == 1  # one reply per trial, shared
    # k=2: only 5/5 is flagged, so one wrong answer decides. The shared text (wrong): 1 request for
    # three items; i03, i05 (EASY, right): 5 each; i04 (wrong): 1.
    assert len(llm_double.chat_requests) == p.sent == 1 + 5 + 1 + 5
    # a pool of i03..i05 (chance 1/8 per trial) is wrong whole while i04 is wrong: after 3 trials
    # at most 2/5 is left, below min_accuracy, so the pool's verdict is decided
    units = {"i03": "question_id=q", "i04": "question_id=q", "i05": "question_id=q"}
    pool = _probe(llm_double_resource(hedge=False), df[df["item_id"].isin(units)], BlindConfig(), units)
    assert {(pool.scores[i].trials, pool.scores[i].flagged) for i in units} == {(3, False)}


@pytest.mark.parametrize("paper", registry.names())
def test_probe_reports_on_every_mcq_card_and_drops_nothing(paper, store, llm_double, llm_double_resource):
    make_world(store, _specs(8), benchmark=paper)
    llm_double.responder = _easy_right  # EASY items are text-solvable
    assert _run(store, llm_double_resource(), paper=paper).success
    gr = store.read("gate_results")
    assert (gr["status"] == "kept").all() and gr["blind_flagged"].any()
    card = (store.data_dir / "exports" / paper / "v1" / "README.md").read_text()
    assert "## Text-only (blind) accuracy" in card and "| category=" in card and "**report**" in card
    splits = set(store.read("splits")["split"])
    assert "test" in splits and (paper == "iibench" or splits == {"test"})  # II-Bench alone has a dev split


def test_a_dev_split_where_the_paper_has_none_is_an_opt_in(tmp_path):
    assert SplitSizes.from_config(benchmark_config(registry.get("vague"))).names == ["test"]
    assert SplitSizes.from_config(benchmark_config(registry.get("iibench"))).names == ["dev", "validation", "test"]
    doc = yaml.safe_load(SPLITS_CONFIG.read_text())
    doc["benchmarks"]["vague"] = {"sizes": {"dev": 0.1, "test": "rest"}, "blind": {"action": "drop"}}
    p = tmp_path / "splits.yaml"
    p.write_text(yaml.safe_dump(doc))
    cfg = benchmark_config(registry.get("vague"), path=p)
    assert SplitSizes.from_config(cfg).names == ["dev", "test"] and cfg["blind"]["action"] == "drop"
