import pytest

from forge.benchmarks import registry
from forge.evals.config import load_eval_config, load_models, parse_models, settings_for


def test_demo_config_has_the_stub_model_and_all_paper_settings():
    models = load_models()
    assert [m.backend for m in models] == ["stub"]
    cfg = load_eval_config()
    names = {b: [s.name for s in settings_for(cfg, registry.get(b))] for b in registry.names()}
    assert names["iibench"] == ["none", "1-shot", "2-shot", "3-shot", "cot", "domain", "emotion", "rhetoric"]
    assert names["vimu"] == ["unguided", "guided"] and names["vague"] == [
        "LM",
        "SM",
        "VLM",
        "SM+CoT",
        "VLM+CoT",
        "LM-free-form",
        "SM-free-form",
        "VLM-free-form",
    ]
    assert names["maia"] == ["black_video", "1_frame", "32_frames"]
    assert names["hummus"] == [
        "multimodal",
        "text_description",
        "clas_yes_no_explained",
        "clas_no_or_yes",
        "clas_a_or_b",
    ]


def test_applicability_by_what_the_model_accepts():
    cfg = load_eval_config()
    text, image, frames = parse_models(
        {
            "models": [
                {"name": "t", "model": "t", "accepts": "text"},
                {"name": "i", "model": "i", "accepts": "image"},
                {"name": "f", "model": "f", "accepts": "frames", "max_frames": 8},
            ]
        }
    )
    vague = {s.name: s for s in settings_for(cfg, registry.get("vague"))}
    assert vague["LM"].applicable(text)[0] and not vague["VLM"].applicable(text)[0]
    assert not vague["SM"].applicable(text)[0]  # SM needs the model's own caption
    maia = {s.name: s for s in settings_for(cfg, registry.get("maia"))}
    assert not maia["32_frames"].applicable(image)[0] and maia["1_frame"].applicable(image)[0]
    assert maia["32_frames"].n_frames(frames) == 8  # capped by the model's max_frames


def test_bad_model_entries_are_refused():
    with pytest.raises(ValueError):
        parse_models({"models": [{"name": "a b", "model": "x"}]})
    with pytest.raises(ValueError):
        parse_models({"models": [{"name": "a", "model": "x", "accepts": "audio"}]})
    with pytest.raises(ValueError):
        parse_models({"models": [{"name": "a", "model": "x"}, {"name": "a", "model": "y"}]})
