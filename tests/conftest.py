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
