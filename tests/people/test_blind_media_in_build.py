"""The blind baseline's re-encoded media are made by the build while Label Studio is down
(``forge.evals.human.run_human_tasks`` with no client), so the loop's first push only uploads
(docs/review.md, "The loop"). No server: the build's side alone."""

from __future__ import annotations

import hashlib

from forge.benchmarks.registry import get
from forge.evals import human
from forge.export.stages import run_export
from forge.people.links import BLIND_MEDIA
from forge.splits.config import stage_settings
from forge.storage import TableStore
from tests.review import world


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_build_with_label_studio_down_makes_the_blind_copies_once(tmp_path, monkeypatch):
    cfg = tmp_path / "review.yaml"
    cfg.write_text("defaults: {policy: advisory}\n")
    monkeypatch.setenv("SUBTEXT_REVIEW_CONFIG", str(cfg))
    data = tmp_path / "data"
    monkeypatch.setenv("SUBTEXT_DATA_DIR", str(data))
    store = TableStore(data)
    rows = []
    for i in range(1, 5):
        media = world.image(data, f"iibench_{i}", (30 * i, 90, 160))
        rows.append(
            world.base(
                f"ii{i}",
                "iibench",
                media,
                task="mcq",
                question=f"What does image {i} imply?",
                options=[f"Option {c}" for c in "ABCDEF"],
                option_types=["correct", *["distractor"] * 5],
            )
        )
    world.write_gated(store, "iibench", rows)
    spec = get("iibench")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    items, _version = human.test_items(store, spec)
    assert len(items)

    out = human.run_human_tasks(
        store, spec, stage_settings(spec).review_settings(), None, "Label Studio is not reachable"
    )
    assert out.frame("review_tasks").empty  # nothing pushed: the tool is down
    assert out.metadata["note"] == "Label Studio is not reachable"
    assert out.metadata["blind_media"] == f"{len(items)} item(s) ready for the first push"
    made = sorted((data / BLIND_MEDIA / "iibench").iterdir())
    assert len(made) == len(items)
    sources = {_digest(data / p) for ps in items["media_paths"] for p in ps}
    assert not sources & {_digest(p) for p in made}  # other bytes than the review task's files

    # the next build (or the loop's push) keeps them: nothing is encoded again
    stamps = {p: p.stat().st_mtime_ns for p in made}
    human.run_human_tasks(store, spec, stage_settings(spec).review_settings(), None, "down again")
    assert {p: p.stat().st_mtime_ns for p in made} == stamps
