"""The closing summary says what the LLM stages cost: requests, cache hits and dollars, from the
spend ledger (every CLI build ends with it)."""

import pandas as pd

from forge.console.build_summary import summarize
from forge.storage import TableStore, refresh_catalog


def test_summary_reports_llm_requests_cache_hits_and_cost(tmp_path):
    store = TableStore(tmp_path)
    ledger = pd.DataFrame(
        {
            "backend": ["openai", "openai", "openai"],
            "kind": ["call", "call", "cache_hit"],
            "cost_usd": [0.0125, 0.0075, 0.0],
        }
    )
    store.write("llm_ledger", ledger)
    refresh_catalog(store)
    s = summarize(store, [])
    assert s.llm == {"requests": 2, "cache_hits": 1, "cost_usd": 0.02}
    assert "  LLM: 2 requests, 1 cache hits, $0.0200" in s.lines()


def test_no_llm_line_without_requests(tmp_path):
    store = TableStore(tmp_path)
    store.write("rejects", pd.DataFrame({"stage": ["frames"], "reason": ["blurry"]}), "b")
    refresh_catalog(store)
    assert not any(line.lstrip().startswith("LLM:") for line in summarize(store, []).lines())
