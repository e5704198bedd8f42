"""The engine's settings are the resource's fields (one declaration), and one helper reads stage overrides."""

from __future__ import annotations

from typing import Any

import pytest

from forge.llm.settings import EngineSettings, LLMSettings
from resources.llm import LLMResource


def _changed(value: Any) -> Any:
    """A value of the same kind as a field's default, but different from it."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 3
    if isinstance(value, str):
        return value + "-x"
    if isinstance(value, list):
        return ["some_stage"]
    if isinstance(value, dict):
        return {}
    return None


def test_every_engine_setting_is_resource_config_and_reaches_the_engine():
    fields = LLMSettings.model_fields
    assert set(fields) <= set(LLMResource.model_fields)
    assert not set(vars(LLMResource).get("__annotations__", {})) & set(fields)  # none declared twice
    config = {n: _changed(f.get_default(call_default_factory=True)) for n, f in fields.items()}
    config = {n: v for n, v in config.items() if v not in (None, {})}
    config["stage_overrides"] = {"gen": {"timeout_s": 3.0, "model": "m2"}}
    config["rpm"] = 50
    settings = LLMResource(backend="stub", **config).settings()
    assert isinstance(settings, EngineSettings)
    for name, value in config.items():
        assert getattr(settings, name) == value, name
    # engine-only knobs are not resource config
    assert "verbatim" not in LLMResource.model_fields and settings.verbatim is False


def test_provider_defaults_to_the_base_url():
    assert LLMResource(base_url="http://127.0.0.1:9/v1").settings().provider == "http://127.0.0.1:9/v1"
    assert LLMResource(base_url="http://127.0.0.1:9/v1", provider="p").settings().provider == "p"


def test_stage_reads_overrides_in_one_place():
    s = EngineSettings(
        model="m",
        transcription_model="w",
        retry_budgets={"server": 1, "timeout": 2},
        stage_overrides={
            "a": {"model": "ma", "params": {"temperature": 0}, "retry_budgets": {"timeout": 5}, "timeout_s": 0.0},
            "b": {"model": None, "hedge_after_s": None},
        },
    )
    assert s.stage("a", "model") == "ma" and s.stage("b", "model") == "m" and s.stage("c", "model") == "m"
    assert s.stage("a", "model", s.transcription_model) == "ma" and s.stage("c", "model", "w") == "w"
    assert s.stage("a", "params", {}) == {"temperature": 0} and s.stage("b", "params", {}) == {}
    assert s.stage("a", "retry_budgets") == {"server": 1, "timeout": 5}  # mappings merge, the stage's keys win
    assert s.stage("c", "retry_budgets") == {"server": 1, "timeout": 2}
    assert s.stage("a", "timeout_s") == 0.0 and s.stage("b", "timeout_s") == 60.0  # 0 is a value, None is unset
    assert s.stage("b", "hedge_after_s") is None
    with pytest.raises(ValueError, match="unknown keys"):
        EngineSettings(stage_overrides={"x": {"timout_s": 3}}).check_overrides()
