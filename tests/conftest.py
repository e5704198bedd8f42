# --- A data dir's recorded environment (forge/provenance/environment.py) is not applied to the suite ----
import os as _os_env

_os_env.environ.setdefault("SUBTEXT_RECORDED_ENV", "off")  # a user's `make demo` record must not leak into tests
# The paper policy (`required`) holds back every item no person reviewed; the other stages' tests
# export without reviewers, so the suite runs `advisory` (tests/review set the policy they test).
_os_env.environ.setdefault("SUBTEXT_REVIEW_POLICY", "advisory")

# --- LLM test double (issue 4; see docs/llm.md "Testing against the double") ---------------
import pytest as _pytest_llm

# The registry hands the contracts (forge/storage) the benchmarks' names and contract folders when it
# is imported, as every entry point does (definitions, cli, the console); a test file run alone too.
import forge.benchmarks.registry  # noqa: F401

# the real Label Studio server (ls_server, review_env) of tests/review and tests/protocol
pytest_plugins = ("tests.labelstudio_server",)


@_pytest_llm.fixture
def llm_double():
    """An OpenAI-compatible server on 127.0.0.1: ``.base_url``, ``.script(...)``, ``.responder``, ``.requests``."""
    from tests.llm_double import LLMDouble

    with LLMDouble() as double:
        yield double
    if double.responder_errors:  # each was answered HTTP 500 and retried: a broken script, not a fault
        errors = sorted(set(double.responder_errors))
        _pytest_llm.fail(f"the test's LLM responder raised {len(double.responder_errors)} times: {errors[:5]}")


@_pytest_llm.fixture
def llm_double_resource(llm_double, tmp_path):
    """Factory: ``llm_double_resource(**overrides)`` → an ``LLMResource`` pointing at the double
    (own cache file under tmp_path)."""
    from tests.llm_double import double_resource

    def make(**overrides):
        overrides.setdefault("cache_path", str(tmp_path / "llm_cache.sqlite"))
        return double_resource(llm_double, **overrides)

    return make


# --- The plausible-server demo build, one per test run (issue #56) -----------------------------------
@_pytest_llm.fixture(scope="session")
def demo_build(tmp_path_factory):
    """The whole demo built against the plausible double (tests/e2e/shared_build.py): made once per
    run by the first worker that asks, read by the others. Read-only: ``.writable_copy(dest)`` to write."""
    from tests.e2e.shared_build import demo_build as shared

    return shared(tmp_path_factory)


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


# --- Two workers (pytest-xdist: `make test` runs `-n 2`) ---------------------------------------------
# Work is handed out a file at a time (xdist's loadfile): a file's tests run on one worker, in order,
# so its module-scoped fixtures (a whole demo, a Ray cluster, a webserver) are built once, not once per
# worker. tests/review and tests/protocol count as one file: their tests share one Label Studio server
# (tests/labelstudio_server.py), so one server starts per run. (xdist_group marks are not used: xdist 3.8 tags them onto
# the node id, which pytest 9.2 no longer lets a plugin change.) The files with tests marked e2e, slow,
# browser or cli are handed out first, so neither worker is left with a long one at the end.
_FIRST = ("e2e", "slow", "browser", "cli")


def xdist_scope(nodeid: str) -> str:
    """The unit of work a test is handed out in: its file, or ``tests/review`` for the Label Studio
    server's users (tests/review and tests/protocol share its session fixture: one start per run)."""
    path = nodeid.split("::", 1)[0]
    return "tests/review" if path.startswith(("tests/review/", "tests/protocol/")) else path


def pytest_xdist_make_scheduler(config: _pytest_llm.Config, log):
    if config.getvalue("dist") not in ("load", "loadfile"):
        return None  # an explicitly chosen other mode (each, loadscope, loadgroup, worksteal) is kept
    from xdist.scheduler import LoadScopeScheduling

    class ByFile(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return xdist_scope(nodeid)

    config.option.loadscopereorder = False  # keep the order the workers sorted (longest first)
    return ByFile(config, log)


@_pytest_llm.hookimpl(trylast=True)  # after pytest's own reordering
def pytest_collection_modifyitems(config: _pytest_llm.Config, items: list[_pytest_llm.Item]) -> None:
    if not _os_env.environ.get("PYTEST_XDIST_WORKER"):
        return  # one process: the order is pytest's own
    rank: dict[str, int] = {}
    for item in items:
        r = next((i for i, m in enumerate(_FIRST) if item.get_closest_marker(m)), len(_FIRST))
        scope = xdist_scope(item.nodeid)
        rank[scope] = min(r, rank.get(scope, r))
    items.sort(key=lambda item: rank[xdist_scope(item.nodeid)])  # stable: a file keeps its tests' order
