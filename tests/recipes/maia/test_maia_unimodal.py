"""MAIA's unimodal baseline end to end: a tiny causal LM built here from a config (no download),
scored through minicons on Italian statements; the length normalisation checked by hand."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from assets.recipes.maia.logic import unimodal as um
from forge.benchmarks.registry import get

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("minicons")

ITALIAN = [
    "L'uomo con la camicia di flanella ha la testa rasata.",
    "L'uomo con la camicia di flanella porta i capelli in una treccia.",
    "La donna sorride perché è felice.",
    "La donna piange perché è felice.",
    "Il cane corre verso la porta.",
    "Il gatto dorme sulla sedia.",
    "Più tardi, città e perché: così è.",
]


def _tiny_lm(path, seed: int):
    """A GPT-2 of two layers with a byte-level BPE trained on a few Italian lines, saved to ``path``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(ITALIAN * 5, trainer)
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>"
    )
    torch.manual_seed(seed)
    cfg = transformers.GPT2Config(
        vocab_size=len(fast), n_positions=64, n_embd=32, n_layer=2, n_head=2, bos_token_id=0, eos_token_id=0
    )
    model = transformers.GPT2LMHeadModel(cfg).eval()  # no dropout: the same numbers as minicons
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return model, fast


def _by_hand(model, tok, text: str) -> float:
    """Mean log-probability of tokens 2..T given their prefix (token 1 has no context)."""
    ids = tok(text, return_tensors="pt")["input_ids"]
    with torch.no_grad():
        logp = torch.log_softmax(model(ids).logits[0, :-1], dim=-1)
    picked = logp.gather(1, ids[0, 1:, None])[:, 0]
    return float(picked.sum()) / (ids.shape[1] - 1)


def _items() -> pd.DataFrame:
    # two questions with pools of two pairs; the true statement sits at A or B
    rows = []
    pairs = [
        (ITALIAN[0], ITALIAN[1], "A", "q1"),
        (ITALIAN[3], ITALIAN[2], "B", "q1"),
        (ITALIAN[4], ITALIAN[5], "A", "q2"),
    ]
    pairs.append((ITALIAN[5], ITALIAN[6], "B", "q2"))
    for k, (a, b, ans, q) in enumerate(pairs):
        rows.append(
            {
                "item_id": f"sv{k}",
                "task": "statement_verification",
                "category": "causal" if q == "q1" else "spatial",
                "options": [a, b],
                "answer": ans,
                "labels": json.dumps({"question_id": q}),
                "source_item_id": f"clip{q}",
                "split": "test",
            }
        )
    rows.append({**rows[0], "item_id": "oe0", "task": "open_ended", "options": None, "answer": "x"})
    return pd.DataFrame(rows)


def test_length_normalisation_matches_hand_computation(tmp_path):
    model, tok = _tiny_lm(tmp_path / "lm", seed=1)
    got = um.statement_scores(ITALIAN[:4], str(tmp_path / "lm"), batch_size=3)  # padding across a batch
    want = [_by_hand(model, tok, t) for t in ITALIAN[:4]]
    assert np.allclose(got, want, atol=1e-4)
    # a longer statement is not penalised by its length: the sum differs, the mean is per token
    assert len(tok(ITALIAN[1])["input_ids"]) != len(tok(ITALIAN[0])["input_ids"])


def test_baseline_end_to_end_two_models(tmp_path, monkeypatch):
    m1, t1 = _tiny_lm(tmp_path / "a", seed=1)
    m2, t2 = _tiny_lm(tmp_path / "b", seed=2)
    items = _items()
    cfg = um.unimodal_config({"models": [str(tmp_path / "a")]}, env={um.ENV_MODELS: str(tmp_path / "b")})
    assert cfg is not None and len(cfg.models) == 2
    preds = um.unimodal_predictions(items, cfg)
    assert list(preds["item_id"]) == ["sv0", "sv1", "sv2", "sv3"]  # the open question is not a pair
    # by hand: the statement with the single highest normalised score over both models
    want = []
    for r in items[items["task"] == "statement_verification"].itertuples():
        s = [[_by_hand(m, t, x) for x in r.options] for m, t in ((m1, t1), (m2, t2))]
        best = int(np.argmax(np.max(np.array(s), axis=0)))
        want.append("AB"[best] == r.answer)
    assert preds["correct"].tolist() == want
    scores = um.unimodal_scores(get("maia"), preds, items, n_boot=50)
    acc = scores[(scores["metric"] == "sv_accuracy") & (scores["slice"] == "all")]["value"].iloc[0]
    assert math.isclose(acc, sum(want) / 4)
    pool = scores[(scores["metric"] == "pool_consistency") & (scores["slice"] == "all")]
    assert pool["primary"].tolist() == [True]
    assert math.isclose(pool["value"].iloc[0], ((want[0] and want[1]) + (want[2] and want[3])) / 2)
    assert set(scores["model"]) == {"unimodal"} and set(scores["setting"]) == {"text_only"}
    assert not scores[scores["primary"]]["metric"].ne("pool_consistency").any()
    # the asset reaches the same two steps through MAIA's hooks, by the evaluation's name
    monkeypatch.setenv(um.ENV_MODELS, str(tmp_path / "b"))
    hooks = get("maia").hooks
    via = hooks.extra_eval_configure(um.UNIMODAL.name, {"unimodal": {"models": [str(tmp_path / "a")]}})
    assert via == cfg
    preds2, scores2, md = hooks.extra_eval_evaluate(um.UNIMODAL.name, get("maia"), items, "test", via, 50, 0)
    assert preds2["correct"].tolist() == want and md["pairs"] == 4 and set(scores2["split"]) == {"test"}


def test_pick_statements_takes_highest_over_models():
    a = np.array([[-1.0, -2.0], [-3.0, -1.5]])
    b = np.array([[-4.0, -0.5], [-2.0, -2.5]])
    # pair 0: best score -0.5 is B (model b); pair 1: best -1.5 is B (model a)
    assert um.pick_statements({"a": a, "b": b}).tolist() == [1, 1]


def test_not_configured_says_how(tmp_path):
    assert um.unimodal_config({}, env={}) is None
    assert "benchmarks.maia.unimodal.models" in um.HOW_TO_CONFIGURE and um.ENV_MODELS in um.HOW_TO_CONFIGURE
    with pytest.raises(FileNotFoundError, match="not found"):
        um.unimodal_config({"models": [str(tmp_path / "missing")]}, env={})
