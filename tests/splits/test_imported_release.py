"""A published release is immutable downstream (issue 35.2): with default settings an imported
II-Bench item's question, options, option order, letters and gold reach the export and the
evaluation's input byte-identical to the release, and its own split is kept. Every gold here is
"A" (a balancing gate would re-letter them all) and the text-only double answers every question
right (a text-only filter would drop them all)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd

from assets.recipes.iibench.logic.release import parse_release
from forge.benchmarks import registry
from forge.checks.mcq import letter_index
from forge.evals.pipeline import load_export
from forge.export.stages import _card_sections
from forge.gates.stages import run_gates
from forge.releases.config import ReleaseInfo
from forge.releases.records import batch_part, place_media
from forge.splits.config import StageSettings, benchmark_config
from forge.storage.contracts import load_contract
from tests.splits.helpers import noise_image
from tests.splits.test_splits_assets import _check, _md, _run, store  # noqa: F401 (fixture)

FIXTURE = Path(__file__).resolve().parents[1] / "recipes" / "iibench" / "fixtures" / "exact"


def _release(root: Path, n_test: int = 16, n_dev: int = 3) -> Path:
    """The official data/{dev,test}.json shape (records copied from the exact-format fixture),
    grown to ``n_test`` + ``n_dev`` images, every gold letter A."""
    d = root / "II-Bench"
    (d / "data").mkdir(parents=True)
    for split, n in (("test", n_test), ("dev", n_dev)):
        template = json.loads((FIXTURE / "data" / f"{split}.json").read_text())[0]
        recs = []
        for i in range(n):
            r = copy.deepcopy(template)
            r["local_path"] = f"images/{split}/{split}-{i}.jpg"
            q = r["questions"][0]
            opts = [f"Reading {k} of {split} picture {i}: the owl {'is' if k else 'is not'} wise." for k in range(6)]
            q.update(
                id=f"{split}-{i}",
                question=f"What does {split} picture {i} imply?",
                options=opts,
                answer="A",
                correct_option=opts[0],
            )
            recs.append(r)
            noise_image(d / r["local_path"], seed=1000 * (split == "dev") + i)  # unrelated pHashes
        (d / "data" / f"{split}.json").write_text(json.dumps(recs, ensure_ascii=False, indent=1))
    return d


def _import(store, tmp_path) -> dict[str, dict]:
    """Import the release into iibench_items as the release asset does; returns question → record."""
    d = _release(tmp_path)
    info = ReleaseInfo("iibench", "ii-bench", d, "v1", "CC BY-SA 4.0", "en")
    parsed = parse_release(info)
    assert not getattr(parsed, "rejects", None)
    place_media(parsed.media, store.data_dir)
    c = load_contract("iibench_items")
    store.write("iibench_items", c.conform(parsed.items), batch_part(info.name), schema=c.arrow_schema())
    released = {}
    for split in ("dev", "test"):
        for r in json.loads((d / "data" / f"{split}.json").read_text()):
            released[r["questions"][0]["question"]] = {**r["questions"][0], "split": split}
    return released


def _always_a(body):
    return {"answer": "A"}  # the text-only double: right on every item (every gold is A)


def _assert_as_released(rows: pd.DataFrame, released: dict[str, dict]) -> None:
    assert len(rows) == len(released)
    for r in rows.itertuples():
        rel = released[r.question]
        assert list(r.options) == rel["options"], r.question  # same texts, same order
        assert r.answer == rel["answer"] and r.options[letter_index(r.answer)] == rel["correct_option"]
        assert r.split == rel["split"]  # the release's own split


def test_imported_release_reaches_export_and_evaluation_as_released(
    store, tmp_path, llm_double, llm_double_resource, monkeypatch
):
    monkeypatch.delenv("SUBTEXT_REVIEW_POLICY")  # default settings throughout: the paper's review stands
    released = _import(store, tmp_path)
    llm_double.responder = _always_a
    llm = llm_double_resource()
    res = _run(store, llm, paper="iibench")
    assert res.success

    gr = store.read("gate_results")
    assert (gr["status"] == "kept").all() and not gr["reshuffled"].any()
    assert gr["blind_flagged"].all()  # text-solvable, reported, kept
    assert _md(res, "iibench_gated")["imported"].value["reshuffled"] == 0
    v1 = store.data_dir / "exports" / "iibench" / "v1"
    export = pd.concat([pd.read_parquet(p) for p in sorted((v1 / "parquet").glob("*.parquet"))], ignore_index=True)
    _assert_as_released(export, released)
    assert set(export["split"]) == {"dev", "test"}
    for line in (v1 / "data" / "test" / "metadata.jsonl").read_text().splitlines():  # the JSONL copy too
        row = json.loads(line)
        assert row["options"] == released[row["question"]]["options"] and row["answer"] == "A"
    published = load_export(store.data_dir / "exports", registry.get("iibench")).items
    _assert_as_released(published, released)  # what evaluation reads
    card = (v1 / "README.md").read_text()
    assert "exactly as released" in card and "## Text-only (blind) accuracy" in card

    # the opt-in text-only drop still keeps imported items (gates.imported.drop_blind_solvable is off)
    res = _run(store, llm, paper="iibench", select=("gated",), run_config=_drop())
    assert (store.read("gate_results")["status"] == "kept").all()
    assert "imported release items kept" in _check(res, "gate_blind_solvability").metadata["note"].value


def _drop():
    return {"ops": {"iibench_gated": {"config": {"blind_action": "drop"}}}}


def test_opt_ins_change_imported_items_and_the_card_says_so(store, tmp_path, llm_double, llm_double_resource):
    _import(store, tmp_path)
    llm_double.responder = _always_a
    assert _run(store, llm_double_resource(), paper="iibench", select=("splits",)).success
    spec = registry.get("iibench")
    cfg = benchmark_config(spec)
    cfg["gates"]["imported"] = {"rebalance_positions": True, "drop_blind_solvable": True}
    cfg["blind"]["action"] = "drop"
    out = run_gates(store, spec, StageSettings.parse(cfg), llm_double_resource().engine)
    res = out.frame("gate_results")
    assert (res["reason"] == "blind_solvable").all()  # both opt-ins on: flagged imported items dropped
    cfg["blind"]["action"] = "report"
    settings = StageSettings.parse(cfg)
    out = run_gates(store, spec, settings, llm_double_resource().engine)
    gated = out.frame("gated_items")
    assert gated["reshuffled"].sum() > 0 and set(gated["answer"]) != {"A"}  # re-lettered, by opt-in only
    card = "\n".join(_card_sections(gated, out.frame("gate_results"), settings.gates))
    assert "Imported items changed by opt-in options" in card and "gates.imported.rebalance_positions" in card
