"""Recipe settings: the paper's values by default, named profiles deep-merged over them."""

from __future__ import annotations

import pytest
import yaml

from forge.benchmarks import settings as S

RECIPES = ("hummus", "iibench", "maia", "vague", "vimu")


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv(S.PROFILE_ENV, raising=False)
    for name in RECIPES:
        monkeypatch.delenv(f"SUBTEXT_{name.upper()}_CONFIG", raising=False)


@pytest.mark.parametrize("name", RECIPES)
def test_paper_defaults_load_when_no_profile_is_named(name):
    raw = yaml.safe_load(S.config_path(name).read_text())
    assert "demo" in raw["profiles"], "every recipe names the demo's relaxed values as a profile"
    got = S.recipe_settings(name)
    assert S.active_profile(name) == "paper"
    assert "profiles" not in got
    assert got == {k: v for k, v in raw.items() if k != "profiles"}


def test_paper_values_of_the_vague_scene_criteria():
    c = S.recipe_settings("vague")["candidates"]
    assert (c["min_persons"], c["min_tags"], c["object_vocabulary"]) == (2, 1, "tags")


def test_paper_values_of_the_iibench_question_count(monkeypatch):
    """§3.2 / App. B.2: 1-3 questions per image, as many as the writer finds (no fixed count)."""
    from assets.recipes.iibench.assets import ItemsConfig
    from assets.recipes.iibench.logic.items import questions_wanted

    assert S.recipe_settings("iibench")["items"]["questions_per_image"] is None
    assert ItemsConfig().questions_per_image is None
    assert questions_wanted(ItemsConfig().questions_per_image) == "1 to 3"
    assert S.recipe_settings("iibench", "demo")["items"]["questions_per_image"] == 2
    monkeypatch.setenv(S.PROFILE_ENV, "demo")
    assert questions_wanted(ItemsConfig().questions_per_image) == "2"


def test_demo_profile_overrides_by_argument_and_by_env(monkeypatch):
    paper, demo = S.recipe_settings("vague"), S.recipe_settings("vague", "demo")
    assert demo["candidates"]["min_persons"] == 0 and demo["candidates"]["object_vocabulary"] == "tags_or_caption"
    # deep merge: keys the profile does not name keep the paper's values
    assert demo["candidates"]["min_gap_s"] == paper["candidates"]["min_gap_s"]
    assert demo["direct"] == paper["direct"]
    monkeypatch.setenv(S.PROFILE_ENV, "demo")
    assert S.active_profile("vague") == "demo"
    assert S.recipe_settings("vague") == demo
    assert S.recipe_settings("vague", "paper") == paper  # an explicit profile wins over the env


def test_unknown_profile_is_a_clear_error(monkeypatch):
    with pytest.raises(ValueError, match=r"unknown recipe profile 'fast'.*known profiles: paper, demo"):
        S.recipe_settings("maia", "fast")
    monkeypatch.setenv(S.PROFILE_ENV, "nope")
    with pytest.raises(ValueError, match="'nope'"):
        S.recipe_settings("hummus")


def test_alternate_file_by_env_and_a_fresh_copy_each_call(monkeypatch, tmp_path):
    p = tmp_path / "maia.yaml"
    p.write_text("questions: {per_category: 2}\nprofiles:\n  tiny: {questions: {per_category: 1}}\n")
    monkeypatch.setenv("SUBTEXT_MAIA_CONFIG", str(p))
    assert S.config_path("maia") == p
    assert S.recipe_settings("maia") == {"questions": {"per_category": 2}}
    assert S.recipe_settings("maia", "tiny") == {"questions": {"per_category": 1}}
    assert S.profiles("maia") == ["paper", "tiny"]
    S.recipe_settings("maia")["questions"]["per_category"] = 99  # callers cannot corrupt the cache
    assert S.recipe_settings("maia")["questions"]["per_category"] == 2


def test_config_defaults_are_read_when_a_run_starts(monkeypatch):
    """Run-config defaults follow the profile in effect at run time, not at import."""
    from assets.recipes.vimu.assets import AnnotateConfig

    assert AnnotateConfig().max_clips_per_batch is None  # the paper: every clip
    monkeypatch.setenv(S.PROFILE_ENV, "demo")
    assert AnnotateConfig().max_clips_per_batch == S.recipe_settings("vimu", "demo")["annotate"]["max_clips_per_batch"]


def test_settings_hash_follows_the_effective_settings(tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("a: {x: 1}\nprofiles:\n  same: {a: {x: 1}}\n  other: {a: {x: 2}}\n")
    assert S.settings_hash(p, "paper") == S.settings_hash(p, "same") != S.settings_hash(p, "other")
    assert S.settings_hash(p, "missing") is None


def test_a_benchmark_without_a_settings_file(monkeypatch, tmp_path):
    """A plug-in may declare no recipe settings: splits read none, the recipe settings say so, and
    ``SUBTEXT_<NAME>_CONFIG`` still points it at a file."""
    from dataclasses import replace

    from forge.benchmarks import registry
    from forge.splits.config import benchmark_config

    bare = replace(registry.get("vague"), name="bare", group="bare", package=None, recipe_config=None)
    with registry.registered(bare):
        assert bare.recipe_config_path() is None
        assert benchmark_config(bare)["options"] == str(bare.options)
        with pytest.raises(ValueError, match="no recipe settings file"):
            S.recipe_settings("bare")
        cfg = tmp_path / "bare.yaml"
        cfg.write_text(yaml.safe_dump({"splits": {"test": "rest", "dev": 2}}))
        monkeypatch.setenv("SUBTEXT_BARE_CONFIG", str(cfg))
        assert bare.recipe_config_path() == cfg
        assert benchmark_config(bare)["sizes"] == {"test": "rest", "dev": 2}
