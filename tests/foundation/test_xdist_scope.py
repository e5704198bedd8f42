"""One Label Studio server per test run, wherever its users live (tests/conftest.py, ``xdist_scope``):
every test file that requests a fixture of tests/labelstudio_server.py, directly or through a fixture
that does, is handed out with tests/review to one xdist worker, so the session fixture starts once
(a second server costs minutes). The rule reads a file's source, since the scheduler sees node ids only."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LABEL_STUDIO_SCOPE, label_studio_fixtures, uses_label_studio, xdist_scope

ROOT = Path(__file__).resolve().parents[2]


def test_every_label_studio_user_shares_one_worker():
    assert {"ls_servers", "ls_server", "ls_blind", "review_env"} <= label_studio_fixtures()
    users = [
        str(p.relative_to(ROOT))
        for p in sorted((ROOT / "tests").rglob("test_*.py"))
        if uses_label_studio(str(p.relative_to(ROOT)))
    ]
    assert "tests/review/test_review_flow.py" in users
    assert any(u.startswith("tests/recipes/") for u in users)  # the papers' human-step tests
    assert {xdist_scope(f"{u}::test_x") for u in users} == {LABEL_STUDIO_SCOPE}
    assert (
        xdist_scope("tests/recipes/hummus/test_hummus_logic.py::test_x") == "tests/recipes/hummus/test_hummus_logic.py"
    )


def test_a_file_is_a_user_through_any_fixture_that_requests_the_server(tmp_path):
    direct = tmp_path / "test_direct.py"
    direct.write_text("def test_a(review_env):\n    pass\n")
    indirect = tmp_path / "test_indirect.py"
    indirect.write_text(
        "import pytest\n\n@pytest.fixture\ndef world(ls_server):\n    return ls_server\n\n"
        "def test_b(world):\n    pass\n"
    )
    marked = tmp_path / "test_marked.py"
    marked.write_text('import pytest\n\n@pytest.mark.usefixtures("ls_blind")\ndef test_c():\n    pass\n')
    plain = tmp_path / "test_plain.py"
    plain.write_text("def test_d(tmp_path):\n    pass\n")
    assert [uses_label_studio(str(p)) for p in (direct, indirect, marked, plain)] == [True, True, True, False]
    assert xdist_scope(f"{plain}::test_d") == str(plain)


def test_the_label_studio_unit_is_handed_out_first_then_the_marked_files(monkeypatch):
    from types import SimpleNamespace

    from tests import conftest

    def item(nodeid: str, *marks: str):
        return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda m, marks=marks: m if m in marks else None)

    items = [
        item("tests/a/test_quick.py::t"),
        item("tests/e2e/test_big.py::t", "e2e"),
        item("tests/ops/test_slow.py::t", "slow"),
        item("tests/review/test_x.py::t"),  # the Label Studio unit: no mark of its own needed
        item("tests/b/test_quick.py::t"),
    ]
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw0")
    conftest.pytest_collection_modifyitems(None, items)
    assert [i.nodeid.split("::")[0] for i in items] == [
        "tests/review/test_x.py",
        "tests/e2e/test_big.py",
        "tests/ops/test_slow.py",
        "tests/a/test_quick.py",
        "tests/b/test_quick.py",
    ]
