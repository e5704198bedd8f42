"""One plausible-server demo build per test run, shared by every test that needs it (issue #56).

The build (tests/e2e/run_nonstub.py: the whole demo against the plausible double, then the
unchanged second run of the LLM groups) is made once, by whichever pytest worker asks first; the
other worker waits on a file lock and reads the same result. It lives beside the workers' own
temporary folders (the run's pytest base temp), under a key hashed from the code, the config, the
sample data, the double and the ``SUBTEXT_*`` environment, so a build is never read by code it was
not made by. ``SUBTEXT_TEST_DEMO_CACHE=<dir>`` keeps builds in that folder across runs instead
(same key: an edit anywhere in the hashed tree builds again).

The build is read-only for its users: a test that writes to the data dir or the instance takes
``writable_copy()`` (a plain copy, about 130 MB; a second of disk time).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from filelock import FileLock

ROOT = Path(__file__).resolve().parents[2]
# What the build's result depends on: the code it runs, its config, contracts and sample data, the
# instance settings, and the test double and run script that drive it.
HASHED = (
    "assets",
    "cli",
    "config",
    "data_contracts",
    "forge",
    "jobs",
    "resources",
    "sensors",
    "definitions.py",
    "workspace.yaml",
    "pyproject.toml",
    ".dagster_home/dagster.yaml",
    "tests/e2e",
    "tests/llm_double",
    "tests/foundation/rejects_registry.py",
)
RESULT = "result.json"


def build_key() -> str:
    """A hash of every file under ``HASHED`` (path and bytes), the interpreter and ``SUBTEXT_*``."""
    h = hashlib.sha256()
    for name in HASHED:
        top = ROOT / name
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for p in files:
            if "__pycache__" in p.parts or p.suffix == ".pyc":
                continue
            h.update(str(p.relative_to(ROOT)).encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(sys.executable.encode() + sys.version.encode())
    env = sorted((k, v) for k, v in os.environ.items() if k.startswith("SUBTEXT_") and k != "SUBTEXT_TEST_DEMO_CACHE")
    h.update(json.dumps(env).encode())
    return h.hexdigest()[:20]


@dataclass(frozen=True)
class DemoBuild:
    """The two runs' outcome; ``work`` holds ``home/`` (the instance) and ``data/`` (the data dir)."""

    work: Path
    first: subprocess.CompletedProcess
    second: subprocess.CompletedProcess
    n_first: int  # chat requests of the first run
    n_second: int  # chat requests of the second, unchanged run
    failed_first: int  # LLM calls of the first run that failed and were not cached
    responder_errors: list[str]
    counts: Counter  # (prompt, mode) -> replies the plausible model gave
    counted_first: Counter  # (stage, reason) -> rejects_by_reason summed after the first run
    rejects_first: pd.DataFrame = field(repr=False)

    @property
    def data(self) -> Path:
        return self.work / "data"

    @property
    def home(self) -> Path:
        return self.work / "home"

    def writable_copy(self, dest: Path) -> Path:
        """A copy of ``work`` at ``dest`` (returned) for a test that writes; the shared build stays as built."""
        shutil.copytree(self.work, dest, symlinks=True)
        return dest


def _proc(d: dict) -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess(d["args"], d["returncode"], d["stdout"], d["stderr"])


def _load(root: Path) -> DemoBuild:
    r = json.loads((root / RESULT).read_text())
    return DemoBuild(
        work=root / "work",
        first=_proc(r["first"]),
        second=_proc(r["second"]),
        n_first=r["n_first"],
        n_second=r["n_second"],
        failed_first=r["failed_first"],
        responder_errors=r["responder_errors"],
        counts=Counter({(a, b): n for a, b, n in r["counts"]}),
        counted_first=Counter({(a, b): n for a, b, n in r["counted_first"]}),
        rejects_first=pd.read_parquet(root / "rejects_first.parquet"),
    )


def rejects_by_reason(home: Path) -> Counter:
    """(stage, reason) -> count summed over every materialization's ``rejects_by_reason``."""
    import dagster as dg

    out: Counter = Counter()
    with dg.DagsterInstance.from_config(str(home)) as instance:
        for key in instance.get_asset_keys():
            for rec in instance.fetch_materializations(key, limit=10_000).records:
                md = rec.asset_materialization.metadata if rec.asset_materialization else {}
                v = md.get("rejects_by_reason")
                for reason, n in ((v.value if v is not None else None) or {}).items():
                    out[(key.to_user_string(), reason)] += int(n)
    return out


def _build(root: Path) -> None:
    """Both runs into ``root/work``; their outcome into ``root/result.json`` (written last: its
    presence means the build is whole)."""
    from forge.storage import TableStore
    from tests.e2e.run_nonstub import DOOMED, FLAW_RATES, P_CONTRARY, STUBBORN, build, llm_assets
    from tests.llm_double import LLMDouble
    from tests.llm_double.plausible import Plausible
    from tests.llm_double.server import _free_port

    work = root / "work"
    shutil.rmtree(work, ignore_errors=True)  # a build that died half-way is not read
    with LLMDouble() as double:
        model = Plausible(
            seed=7, doomed=DOOMED, stubborn=STUBBORN, flaw_rates=FLAW_RATES, rotate_flaws=True, p_contrary=P_CONTRARY
        )
        double.responder = model
        port = _free_port()
        first = build(work, double, port)
        n_first = len(double.chat_requests)
        store = TableStore(work / "data")
        rejects_first = store.read("rejects")
        counted_first = rejects_by_reason(work / "home")
        calls = store.read("llm_calls")
        failed_first = int(((calls["outcome"] != "ok") & ~calls["cache_hit"].astype(bool)).sum()) if len(calls) else 0
        second = build(work, double, port, select=llm_assets())
        n_second = len(double.chat_requests) - n_first
        errors = list(double.responder_errors)

    def proc(p: subprocess.CompletedProcess) -> dict:
        return {"args": [str(a) for a in p.args], "returncode": p.returncode, "stdout": p.stdout, "stderr": p.stderr}

    rejects_first.to_parquet(root / "rejects_first.parquet")
    result = {
        "first": proc(first),
        "second": proc(second),
        "n_first": n_first,
        "n_second": n_second,
        "failed_first": failed_first,
        "responder_errors": errors,
        "counts": [[a, b, n] for (a, b), n in model.counts.items()],
        "counted_first": [[a, b, n] for (a, b), n in counted_first.items()],
    }
    tmp = root / (RESULT + ".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(root / RESULT)


def shared_root(tmp_path_factory) -> Path:
    """Where this run's workers meet: ``SUBTEXT_TEST_DEMO_CACHE``, else the run's pytest base temp
    (a worker's own base temp is a folder of it under pytest-xdist)."""
    cache = os.environ.get("SUBTEXT_TEST_DEMO_CACHE")
    if cache:
        return Path(cache)
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def demo_build(tmp_path_factory) -> DemoBuild:
    """The run's shared build: made here if no worker made it yet, else waited for and read."""
    top = shared_root(tmp_path_factory)
    top.mkdir(parents=True, exist_ok=True)
    root = top / f"demo-build-{build_key()}"
    with FileLock(str(root) + ".lock"):
        if not (root / RESULT).exists():
            root.mkdir(exist_ok=True)
            _build(root)
    return _load(root)
