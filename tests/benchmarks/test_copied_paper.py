"""A sixth paper is one folder plus one registry line (#38): a copy of a paper's package under a new
name, kept outside the repository and registered through the environment (the registry line's
stand-in), builds from the sample corpus and is evaluated end to end through the real code location
and the real CLI, and no file of the repository is touched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from forge.benchmarks import registry
from forge.storage import TableStore
from tests.benchmarks.copy_package import copy_package

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
SOURCE, NEW = "hummus", "quip"  # an image paper: its recipe needs frames only, so the copy builds fast


# Not the repository's own files: environments, data, caches, artefacts.
SKIP = {
    ".git",
    ".venv",
    ".venv-review",
    ".venv-lmms",
    "data",
    "test-artifacts",
    "__pycache__",
    "node_modules",
    ".pytest_cache",
    ".ruff_cache",
}


def _status() -> dict[str, tuple[int, int]]:
    """Every file of the repository with its size and modification time. What git ignores is not
    the repository's (the instance's runtime files under .dagster_home/, which tests running at the
    same time on the other worker write)."""
    out = {}
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIP]
        for name in files:
            st = os.stat(os.path.join(folder, name))
            out[os.path.relpath(os.path.join(folder, name), ROOT)] = (st.st_size, st.st_mtime_ns)
    ignored = subprocess.run(
        ["git", "check-ignore", "--stdin"], cwd=ROOT, input="\n".join(out), capture_output=True, text=True
    ).stdout.splitlines()
    return {k: v for k, v in out.items() if k not in set(ignored)}


def test_a_copied_paper_package_builds_and_evaluates_end_to_end(tmp_path):
    pkg = copy_package(ROOT / "assets" / "recipes" / SOURCE, tmp_path / "pkgs" / NEW, SOURCE, NEW)
    assert not list(pkg.rglob(f"*{SOURCE}*")) and SOURCE not in (pkg / "spec.py").read_text()
    assert NEW not in registry.names()
    before = _status()
    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SUBTEXT_", "DAGSTER_", "OPENAI_"))},
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "pkgs"), str(ROOT)]),
        "SUBTEXT_BENCHMARKS": f"{NEW}.spec",
        "SUBTEXT_DATA_DIR": str(data),
        "DAGSTER_HOME": str(home),
    }
    own = [f"{NEW}_{s}" for s in ("pairs", "annotations", "items")]
    shared = [f"{NEW}_{s}" for s in ("splits", "gated", "export", "eval", "eval_report")]
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli.build",
            "--demo",
            "--select",
            "sources",
            "videos",
            "clips",
            "frames",
            *own,
            *shared,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-3000:]
    assert _status() == before, "building the copy touched a file of the repository"

    store = TableStore(data)
    items = store.read(f"{NEW}_items")
    assert len(items) > 0 and set(items["benchmark"]) == {NEW}
    assert items["item_id"].is_unique
    gated = store.read("gated_items", parts=[NEW])
    manifest = json.loads((data / "exports" / NEW / "v1" / "manifest.json").read_text())
    assert 0 < manifest["n_items"] == len(gated) <= len(items)
    card = (data / "exports" / NEW / "v1" / "README.md").read_text()
    assert (pkg / "config.yaml").read_text().rstrip() in card  # the copy's own recipe settings
    preds = store.read("eval_predictions")
    assert set(preds["benchmark"]) == {NEW} and preds["setting"].nunique() >= 2
    scores = store.read("eval_scores")
    primary = scores[scores["primary"] & (scores["slice"] == "all") & (scores["model"] != "random")]
    assert set(primary["benchmark"]) == {NEW} and len(primary) == preds["setting"].nunique()
    assert f"{NEW}_eval_report" in run.stdout and "FAILED" not in run.stdout
