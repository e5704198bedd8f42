# --- A data dir's recorded environment (forge/provenance/environment.py) is not applied to the suite ----
import os as _os_env

_os_env.environ.setdefault("SUBTEXT_RECORDED_ENV", "off")  # a user's `make demo` record must not leak into tests
# The paper policy (`required`) holds back every item no person reviewed; the other stages' tests
# export without reviewers, so the suite runs `advisory` (tests/review set the policy they test).
_os_env.environ.setdefault("SUBTEXT_REVIEW_POLICY", "advisory")

# --- LLM test double (issue 4; see docs/llm.md "Testing against the double") ---------------
import pytest as _pytest_llm


@_pytest_llm.fixture
def llm_double():
    """An OpenAI-compatible server on 127.0.0.1: ``.base_url``, ``.script(...)``, ``.responder``, ``.requests``."""
    from tests.llm_double import LLMDouble

    with LLMDouble() as double:
        yield double


@_pytest_llm.fixture
def llm_double_resource(llm_double, tmp_path):
    """Factory: ``llm_double_resource(**overrides)`` → an ``LLMResource`` pointing at the double
    (own cache file under tmp_path)."""
    from tests.llm_double import double_resource

    def make(**overrides):
        overrides.setdefault("cache_path", str(tmp_path / "llm_cache.sqlite"))
        return double_resource(llm_double, **overrides)

    return make


# --- Recipe settings (assets/recipes/<paper>/config.yaml through forge.benchmarks.settings) ----------
@_pytest_llm.fixture
def recipe_overrides(monkeypatch, tmp_path):
    """Factory: ``recipe_overrides("vague", {"candidates": {"min_persons": 0}})`` writes the
    recipe's paper settings with these overrides deep-merged to a file under tmp_path and points
    ``SUBTEXT_<NAME>_CONFIG`` at it, so the recipe reads them through its ordinary loader."""
    import yaml

    from forge.benchmarks.settings import merge, recipe_settings

    def apply(name: str, overrides: dict) -> dict:
        doc = merge(recipe_settings(name, "paper"), overrides)
        path = tmp_path / f"recipe_{name}.yaml"
        path.write_text(yaml.safe_dump(doc))
        monkeypatch.setenv(f"SUBTEXT_{name.upper()}_CONFIG", str(path))
        return doc

    return apply
