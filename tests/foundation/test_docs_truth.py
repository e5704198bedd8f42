"""The docs tell the truth about the repository: every link, repository path, test name, make
target and ``SUBTEXT_*`` setting they name exists (tests/foundation/docs_truth.py says what is
checked). The planted cases show the check can fail."""

from __future__ import annotations

import pytest

from tests.foundation import docs_truth


@pytest.fixture(scope="module")
def repo_facts():
    return docs_truth.make_targets(), docs_truth.code_text()


def test_every_document_names_only_what_exists(repo_facts):
    targets, code = repo_facts
    docs = docs_truth.documents()
    assert len(docs) >= 20 and any(d.name == "review.md" for d in docs)
    problems = [p for d in docs for p in docs_truth.check(d, targets=targets, code=code)]
    assert not problems, "\n".join(map(str, problems))


PLANTED = {
    "link": "See [the guide](docs/no-such-page.md).",
    "path": "Settings live in `config/no_such_file.yaml`.",
    "test": "Held by `tests/foundation/test_docs_truth.py::test_that_was_never_written`.",
    "name": "Read by `forge/people/server.no_such_function`.",
    "make": "Run `make no-such-target` first.",
    "module": "Run `python -m forge.review.no_such_module`.",
    "setting": "Set SUBTEXT_NO_SUCH_SETTING=1.",
}


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_a_planted_error_is_found(kind, repo_facts, tmp_path):
    targets, code = repo_facts
    doc = docs_truth.ROOT / "docs" / f".planted-{kind}-{tmp_path.name}.md"
    doc.write_text(f"# Planted\n\n{PLANTED[kind]}\n")
    try:
        problems = docs_truth.check(doc, targets=targets, code=code)
    finally:
        doc.unlink()
    assert [p.kind for p in problems] == [kind if kind != "name" else "path"], problems


def test_what_exists_passes(repo_facts, tmp_path):
    targets, code = repo_facts
    doc = docs_truth.ROOT / "docs" / f".planted-ok-{tmp_path.name}.md"
    doc.write_text(
        "[review](review.md), `forge/people/server.py::main`, `forge/people/server.command`,"
        " `make review`, SUBTEXT_REVIEW_PORT, official `scripts/20-vimu_ss.py`.\n"
    )
    try:
        assert docs_truth.check(doc, targets=targets, code=code) == []
    finally:
        doc.unlink()
