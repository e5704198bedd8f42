"""The model under evaluation gets exactly one request per item and setting (issue 35.3).

No repair turns for evaluation: an empty reply is the model's answer and is scored by the
paper's rule (II-Bench: wrong, not an error; ViMU open-ended: judged). Transport retries (429,
5xx) stay and never become the answer. Requests are counted at the OpenAI-protocol double.
"""

from __future__ import annotations

import re
from collections import Counter

import yaml

from forge.benchmarks.registry import get
from forge.evals.config import EVALS_PATH, ModelSpec, benchmark_block
from forge.evals.pipeline import evaluate, model_engine
from tests.evals.test_e2e import _text, build_items
from tests.llm_double import Reply

MODEL = "m-eval"


def _cfg(**settings):
    cfg = yaml.safe_load(EVALS_PATH.read_text())
    cfg["bootstrap"]["n"] = 20
    cfg["circular"] = False
    for bench, names in settings.items():
        block = benchmark_block(cfg, get(bench))
        cfg["benchmarks"][bench] = {**block, "settings": [s for s in block["settings"] if s["name"] in names]}
    return cfg


def _engines(tmp_path, llm_double, llm_double_resource, monkeypatch):
    monkeypatch.setenv("DOUBLE_KEY", "sk-double")
    model = ModelSpec(
        name=MODEL,
        model=MODEL,
        base_url=llm_double.base_url,
        api_key_env="DOUBLE_KEY",
        accepts="frames",
        max_frames=2,
        params={"temperature": 0},
    )
    llm = llm_double_resource()
    # hedge_after_s 0.1: a generation stage would send a second copy of a reply slower than that
    base = llm.settings().model_copy(
        update=dict(retry_budgets={"server": 1}, backoff_base_s=0.01, backoff_max_s=0.02, hedge=True, hedge_after_s=0.1)
    )
    engine = model_engine(model, base, tmp_path / "eval_cache.sqlite")
    return model, engine, llm.engine()


def _model_requests(double) -> list[str]:
    return [_text(b) for b in double.chat_requests if b["model"] == MODEL]


def test_iibench_one_request_per_item_and_setting_empty_reply_is_wrong(
    tmp_path, llm_double, llm_double_resource, monkeypatch
):
    data = tmp_path / "data"
    items = build_items(data)["iibench"].assign(split="test")  # ii0..ii5, gold = ii<i> option <i>
    model, engine, _ = _engines(tmp_path, llm_double, llm_double_resource, monkeypatch)
    seen: Counter = Counter()

    def reply(body):
        if body["model"] != MODEL:
            return None
        text = _text(body)
        q = re.search(r"Q-ii(\d)", text).group(1)
        seen[q] += 1
        if q == "0" and seen[q] == 1:
            return Reply.rate_limited(0.01)  # transport: retried, never the answer
        if q == "1":
            return Reply.error(500)  # transport, past its retry budget: a failed call, not an answer
        if q in ("2", "3"):
            return Reply.text("")  # the model's answer: empty
        if q == "4":
            return Reply.text("Answer: (E", finish_reason="length")  # cut off, still the answer
        return Reply.text("Answer: (F)", delay=0.5)  # ii5: right, slow (waited for, never hedged)

    llm_double.responder = reply
    cfg = _cfg(iibench=("none", "cot"))
    preds, scores, _ = evaluate(get("iibench"), model, cfg, items, None, data, engine, None)

    asked = Counter((re.search(r"Q-ii(\d)", t).group(1), "step by step" in t) for t in _model_requests(llm_double))
    # one request per item and setting; ii0 once more in one setting (its 429), ii1 twice per
    # setting (its 500 and the one retry the budget allows)
    assert len(preds) == 12
    assert asked[("0", False)] + asked[("0", True)] == 3
    assert asked[("1", False)] == asked[("1", True)] == 2
    assert all(asked[(q, cot)] == 1 for q in "2345" for cot in (False, True)), asked
    p = preds.set_index(["item_id", "setting"])
    for s in ("none", "cot"):
        assert p.loc[("ii0", s), "status"] != "call_failed"  # the 429 was not taken as the answer
        assert p.loc[("ii1", s), "status"] == "call_failed"
        for i in ("ii2", "ii3"):  # official eval.py: "" is not parsed, counts, is not correct
            row = p.loc[(i, s)]
            assert row["raw_reply"] == "" and row["status"] == "unparseable" and row["parse_method"] == "empty"
            assert row["correct"] is False or row["correct"] == False  # noqa: E712
        assert p.loc[("ii4", s), "raw_reply"] == "Answer: (E" and bool(p.loc[("ii4", s), "correct"])
        assert bool(p.loc[("ii5", s), "correct"])
    sc = scores[(scores["setting"] == "none") & (scores["slice"] == "all")].set_index("metric")["value"]
    assert sc["accuracy"] == 2 / 6  # ii4, ii5 right; the empty replies and the failed call are wrong
    assert sc["error_rate"] == 1 / 6  # only the failed call is an error, never an empty reply
    assert sc["miss_rate"] == 0.0  # an empty reply is not a miss either (eval.py skips it)

    # re-run: every reply came from the cache, the empty ones included
    n = len(llm_double.chat_requests)
    evaluate(get("iibench"), model, cfg, items, None, data, engine, None)
    assert len(llm_double.chat_requests) - n == 2 * 2  # only ii1's failed call is asked again (+1 retry)


def test_vimu_empty_open_ended_reply_is_judged(tmp_path, llm_double, llm_double_resource, monkeypatch):
    data = tmp_path / "data"
    items = build_items(data)["vimu"].assign(split="test")
    model, engine, judge = _engines(tmp_path, llm_double, llm_double_resource, monkeypatch)
    judged: list[str] = []

    def reply(body):
        rf = (body.get("response_format") or {}).get("json_schema", {}).get("name")
        if rf == "eval_vimu_oe_judge":
            judged.append(_text(body))
            bd = {
                "core_intent": 0,
                "implicit_signal": 0,
                "target_or_social_meaning": 0,
                "hallucination_penalty": 2,
                "literal_only_penalty": 0,
            }
            return {"score_total": -2, "score_breakdown": bd, "verdict": "wrong", "reasoning_short": "empty"}
        if body["model"] == MODEL:
            return Reply.text("")  # every task: an empty reply
        return None

    llm_double.responder = reply
    preds, scores, _ = evaluate(get("vimu"), model, _cfg(vimu=("unguided",)), items, None, data, engine, judge)

    asked = _model_requests(llm_double)
    markers = Counter(re.search(r"Q-vm(OE|EG|RM|SV)\d", t).group(0) for t in asked)
    assert len(asked) == len(items) == 12 and set(markers.values()) == {1}  # one request per item
    oe = preds[preds["task"] == "open_ended"]
    assert len(oe) == 3 and (oe["raw_reply"] == "").all()
    assert len(judged) == 3  # 01-vimu_oe_judge.py judges an empty answer (only [ERROR] skips it)
    assert oe["judge_ok"].astype(bool).all() and (oe["score"] - (-2 + 6) / 15).abs().max() < 1e-9
    mcq = preds[preds["task"] == "multi_select"]
    assert (mcq["status"] != "call_failed").all() and (mcq["score"] == 0.0).all()  # empty selection → 0
    oe_score = scores[(scores["metric"] == "OE") & (scores["slice"] == "all")]
    assert float(oe_score["coverage"].iloc[0]) == 1.0
