"""The shared demo build's bookkeeping (tests/e2e/shared_build.py), without building: its key
follows the code and the environment, two workers asking at once build once, and a build that
died half-way is built again, never read."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pandas as pd

from tests.e2e import shared_build as sb


def _tree(root: Path) -> None:
    (root / "forge").mkdir(parents=True)
    (root / "forge" / "a.py").write_text("x = 1\n")
    (root / "forge" / "__pycache__").mkdir()
    (root / "forge" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (root / "definitions.py").write_text("")


def test_the_key_follows_the_code_and_the_subtext_environment(tmp_path, monkeypatch):
    _tree(tmp_path)
    monkeypatch.setattr(sb, "ROOT", tmp_path)
    first = sb.build_key()
    assert sb.build_key() == first
    (tmp_path / "forge" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\1")  # not code
    monkeypatch.setenv("SUBTEXT_TEST_DEMO_CACHE", str(tmp_path / "elsewhere"))  # where, not what
    assert sb.build_key() == first
    (tmp_path / "forge" / "a.py").write_text("x = 2\n")
    edited = sb.build_key()
    assert edited != first
    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "something-else")
    assert sb.build_key() not in (first, edited)


def _fake_build(calls: list, hold: float = 0.3):
    """Writes what ``_build`` writes (an empty build), slowly, and counts its calls."""

    def build(root: Path) -> None:
        calls.append(root)
        time.sleep(hold)  # the other caller arrives meanwhile
        (root / "work" / "data").mkdir(parents=True, exist_ok=True)
        pd.DataFrame({"stage": ["s"], "reason": ["r"]}).to_parquet(root / "rejects_first.parquet")
        proc = {"args": ["x"], "returncode": 0, "stdout": f"built {len(calls)}", "stderr": ""}
        result = {
            "first": proc,
            "second": proc,
            "n_first": 3,
            "n_second": 0,
            "failed_first": 0,
            "responder_errors": [],
            "counts": [["maia_questions", "flaw", 2]],
            "counted_first": [["s", "r", 1]],
        }
        (root / sb.RESULT).write_text(json.dumps(result))

    return build


def test_two_callers_at_once_build_once_and_read_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBTEXT_TEST_DEMO_CACHE", str(tmp_path / "cache"))
    calls: list = []
    monkeypatch.setattr(sb, "_build", _fake_build(calls))
    got: list = []
    threads = [threading.Thread(target=lambda: got.append(sb.demo_build(None))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(got) == 2
    a, b = got
    assert a.work == b.work and a.first.stdout == b.first.stdout == "built 1"
    assert a.counts == {("maia_questions", "flaw"): 2} and a.counted_first == {("s", "r"): 1}
    assert a.rejects_first.equals(b.rejects_first)
    sb.demo_build(None)
    assert len(calls) == 1  # built: read from then on


def test_a_half_made_build_is_built_again(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBTEXT_TEST_DEMO_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "cache" / f"demo-build-{sb.build_key()}"
    (root / "work" / "data").mkdir(parents=True)  # a build killed before it wrote its result
    calls: list = []
    monkeypatch.setattr(sb, "_build", _fake_build(calls, hold=0))
    built = sb.demo_build(None)
    assert len(calls) == 1 and built.n_first == 3 and (built.work / "data").is_dir()


def test_a_writable_copy_leaves_the_shared_build_as_it_was(tmp_path, monkeypatch):
    monkeypatch.setenv("SUBTEXT_TEST_DEMO_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(sb, "_build", _fake_build([], hold=0))
    built = sb.demo_build(None)
    (built.data / "t.txt").write_text("as built")
    copy = built.writable_copy(tmp_path / "mine")
    (copy / "data" / "t.txt").write_text("changed")
    assert (built.data / "t.txt").read_text() == "as built"
