"""II-Bench's multi-label image types, as the paper's Table 6 counts them: a question is in the
slice of every image type its image's ``meta_data`` lists, so the slices' n sum past the question
count. The fixture has the release's exact record shape (data/test.json) with made-up content;
the expected counts are read from the fixture's JSON here, not from the importer."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from assets.evals.paper_reports import published_path
from assets.recipes.iibench.logic.release import parse_release
from assets.recipes.iibench.logic.taxonomy import normalise_label
from forge.benchmarks.registry import get
from forge.evals import paper_report as pr
from forge.evals.scoring import Scorer, label_slices, score_benchmark
from forge.releases.config import ReleaseInfo

FIXTURE = Path(__file__).parent / "fixtures" / "multilabel"


def _release_counts(axis: str) -> Counter:
    """Questions per label of ``axis``, straight from the fixture's meta_data (each listed label once)."""
    counts: Counter = Counter()
    for rec in json.loads((FIXTURE / "data" / "test.json").read_text()):
        raw = rec["meta_data"][axis]
        for label in dict.fromkeys(raw if isinstance(raw, list) else [raw]):
            counts[normalise_label(axis, label)] += len(rec["questions"])
    return counts


def _imported() -> pd.DataFrame:
    info = ReleaseInfo("iibench", "iib-multi", FIXTURE, "v1", "x", "en", options={"require_media": False})
    parsed = parse_release(info)
    assert not parsed.rejects
    return parsed.items


def _preds(items: pd.DataFrame) -> pd.DataFrame:
    """One reply per question of setting ``none``: every second one right."""
    n = len(items)
    right = [k % 2 == 0 for k in range(n)]
    return pd.DataFrame(
        {
            "setting": "none",
            "item_id": items["item_id"],
            "variant": 0,
            "task": "mcq",
            "category": items["category"],
            "source_item_id": items["source_item_id"],
            "status": "ok",
            "score": [float(x) for x in right],
            "correct": right,
            "parse_method": "iib_paren",
            "detail": [{} for _ in range(n)],
        }
    )


def _scores(items: pd.DataFrame) -> pd.DataFrame:
    rows = score_benchmark(get("iibench"), _preds(items), items, Scorer(n_boot=0))
    return pd.DataFrame(rows).assign(model="m-test", backend="openai", benchmark="iibench")


def test_every_listed_image_type_counts_the_question():
    items = _imported()
    expected = _release_counts("image_type")
    assert sum(expected.values()) > len(items)  # the fixture's images list two types (as the release does)
    labels = [json.loads(x)["image_type"] for x in items["labels"]]
    assert any(isinstance(x, list) and len(x) == 2 for x in labels)  # kept whole, not the first type
    scores = _scores(items)
    got = scores[(scores["metric"] == "accuracy") & scores["slice"].str.startswith("image_type=")]
    n = dict(zip(got["slice"].str.removeprefix("image_type="), got["n"], strict=True))
    assert n == dict(expected)
    assert sum(n.values()) > len(items)
    # each slice's value is the mean over exactly the questions that list the type
    right = dict(zip(items["item_id"], _preds(items)["score"], strict=True))
    for t in expected:
        ids = [
            i for i, lab in zip(items["item_id"], labels, strict=True) if t in (lab if isinstance(lab, list) else [lab])
        ]
        v = float(got.loc[got["slice"] == f"image_type={t}", "value"].iloc[0])
        assert v == pytest.approx(sum(right[i] for i in ids) / len(ids))
    # rhetoric is multi-label too; domain is one per question
    rh = scores[(scores["metric"] == "accuracy") & scores["slice"].str.startswith("rhetoric=")]
    assert dict(zip(rh["slice"].str.removeprefix("rhetoric="), rh["n"], strict=True)) == dict(
        _release_counts("rhetoric")
    )
    dom = scores[(scores["metric"] == "accuracy") & scores["slice"].str.startswith("domain=")]
    assert int(dom["n"].sum()) == len(items)


def test_a_list_under_a_single_label_key_is_an_error():
    g = pd.DataFrame({"item_id": ["a", "b"], "labels_d": [{"domain": "life"}, {"domain": ["life", "art"]}]})
    with pytest.raises(ValueError, match="'domain' of item b"):
        label_slices(g, "domain")
    assert [(v, len(p)) for v, p in label_slices(g, "domain", ("domain",))] == [("art", 1), ("life", 2)]


def test_paper_report_of_the_imported_release_shows_each_columns_n():
    items = _imported()
    scores = _scores(items)
    paper = pr.load_published(published_path(get("iibench")))
    md, cells = pr.paper_report("II-Bench", paper, scores, {"none"})
    t6 = next(t for t in paper.tables if t.id == "table6")
    mine = cells["table6"][cells["table6"]["model"] == "m-test"].set_index("column")
    types, diffs = _release_counts("image_type"), _release_counts("difficulty")
    for c in t6.columns:
        key, _, value = c.slice.partition("=")
        want = len(items) if c.slice == "all" else (types if key == "image_type" else diffs).get(value)
        if want is None:  # a type the fixture does not have: no cell value
            assert math.isnan(mine.loc[c.name, "ours"])
            continue
        assert int(mine.loc[c.name, "n"]) == want, c.name
        assert mine.loc[c.name, "paper_n"] == c.n
    table = md.split("**Table 6")[1].split("**Table 7")[0]
    assert "Meme (paper n=292)" in table
    assert f"· n={types['meme']}" in table.split("| m-test |")[1].split("\n")[0]
    # every column with a paper count is named under the table with both counts
    assert f"- Meme: n = {types['meme']} here, 292 in the paper's header" in table
    assert f"- Overall: n = {len(items)} here, 1399 in the paper's header" in table


def test_eval_report_shows_each_cells_n():
    from forge.evals import report as rp

    items = _imported()
    scores = _scores(items)
    types = _release_counts("image_type")
    table = rp.slice_table(scores, "accuracy", "image_type")
    head, _, row = table.split("\n")
    cols = [c.strip() for c in head.strip("|").split("|")][2:]
    cells = dict(zip(cols, [c.strip() for c in row.strip("|").split("|")][2:], strict=True))
    assert {c: cells[c].rsplit("n=", 1)[1] for c in cols} == {t: str(k) for t, k in types.items()}
    assert f"· n={len(items)}" in rp.main_table(scores[scores["primary"]])
