# --- A data dir's recorded environment (forge/provenance/environment.py) is not applied to the suite ----
import os as _os_env

# --- Each xdist worker gets its share of the CPUs (set before anything imports torch) ----------------
# Production code gives torch and ONNX Runtime every core (forge/vision/offline.py), right for one
# process. Two workers on two cores each running two OpenMP threads spin against each other: the vision
# and OCR files took 261-345 s that way against 106-115 s with one thread per worker (measured side by
# side on the 2-core machine, docs/operations.md "How long the suite takes"). A value the user set wins;
# subprocesses (builds, the daemon, Label Studio) inherit it.
if _os_env.environ.get("PYTEST_XDIST_WORKER_COUNT"):
    _share = max(1, (_os_env.cpu_count() or 1) // int(_os_env.environ["PYTEST_XDIST_WORKER_COUNT"]))
    _os_env.environ.setdefault("OMP_NUM_THREADS", str(_share))

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
import functools as _functools  # noqa: E402

# Work is handed out a file at a time (xdist's loadfile): a file's tests run on one worker, in order,
# so its module-scoped fixtures (a whole demo, a Ray cluster, a webserver) are built once, not once per
# worker. tests/review, tests/protocol and every other file that uses the real Label Studio count as
# one file: their tests share one Label Studio server (tests/labelstudio_server.py), so one server
# starts per run. (xdist_group marks are not used: xdist 3.8 tags them onto the node id, which pytest
# 9.2 no longer lets a plugin change; the scheduler sees node ids only, so a file's use of the server is
# read from its source.) The Label Studio unit, the longest (about 10 of a run's 15 minutes on one
# worker), is handed out first; then the files with tests marked e2e, slow, browser or cli, so neither
# worker is left with a long one at the end (handed out after them, it kept one worker busy alone for
# about 90 s while the other had nothing left).
_FIRST = ("e2e", "slow", "browser", "cli")
_TESTS = _os_env.path.dirname(_os_env.path.abspath(__file__))
LABEL_STUDIO_SCOPE = "tests/review"


@_functools.cache
def _fixture_args(path: str) -> tuple[dict[str, set[str]], set[str]]:
    """(fixture name -> the names it requests, every name a function of the file requests or a
    string of it names: its tests' and fixtures' arguments, ``usefixtures`` strings)."""
    import ast

    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        tree = ast.parse(text) if "def " in text else None
    except (OSError, SyntaxError, ValueError):
        return {}, set()
    if tree is None:
        return {}, set()
    fixtures: dict[str, set[str]] = {}
    used: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = {a.arg for a in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]}
            used |= args
            if any("fixture" in ast.unparse(d) for d in node.decorator_list):
                fixtures[node.name] = args
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            used.add(node.value)
    return fixtures, used


_LABEL_STUDIO: set[str] = set()  # filled once (label_studio_fixtures)
_USES: dict[str, bool] = {}


def label_studio_fixtures() -> set[str]:
    """The fixtures that start or use the Label Studio server: those of tests/labelstudio_server.py
    and every fixture anywhere under tests/ that requests one of them, at any depth."""
    if not _LABEL_STUDIO:
        import glob

        found = set(_fixture_args(_os_env.path.join(_TESTS, "labelstudio_server.py"))[0])
        every: dict[str, set[str]] = {}
        for path in glob.glob(_os_env.path.join(_TESTS, "**", "*.py"), recursive=True):
            for name, args in _fixture_args(path)[0].items():
                every.setdefault(name, set()).update(args)
        grew = True
        while grew:
            more = {name for name, args in every.items() if args & found} - found
            found |= more
            grew = bool(more)
        _LABEL_STUDIO.update(found)
    return _LABEL_STUDIO


def uses_label_studio(path: str) -> bool:
    """Whether a test file (relative to the repository) requests a Label Studio fixture."""
    if path not in _USES:
        full = _os_env.path.join(_os_env.path.dirname(_TESTS), path)
        _USES[path] = bool(_fixture_args(full)[1] & label_studio_fixtures())
    return _USES[path]


def xdist_scope(nodeid: str) -> str:
    """The unit of work a test is handed out in: its file, or ``tests/review`` for the Label Studio
    server's users (tests/review, tests/protocol and any file requesting its fixtures, such as a
    paper's human-step test in tests/recipes/<paper>/, share its session fixture: one start per run)."""
    path = nodeid.split("::", 1)[0]
    if path.startswith(("tests/review/", "tests/protocol/")) or uses_label_studio(path):
        return LABEL_STUDIO_SCOPE
    return path


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
    if LABEL_STUDIO_SCOPE in rank:
        rank[LABEL_STUDIO_SCOPE] = -1
    items.sort(key=lambda item: rank[xdist_scope(item.nodeid)])  # stable: a file keeps its tests' order
