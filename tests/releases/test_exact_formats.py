"""Each importer on a synthetic release in its paper's exact published shape (tests/recipes/<paper>/fixtures/exact/,
layouts read from the official files: docs/releases.md "Formats"): 0 rejects, every unit offered
is imported, and every key a real record carries is consumed (changing it changes the import)
or named in the importer's ``IGNORED_KEYS``."""

from __future__ import annotations

import csv
import importlib
import io
import json
from pathlib import Path

import pandas as pd
import pytest

from forge.releases.config import ReleaseInfo
from forge.releases.report import markdown

# Every key a record of the real release carries, as (file, key): "parent.key" names a nested
# key, "*" the record id that keys a JSON object; a third element says where in the fixture to
# change it when the first occurrence is not read (see below). Read from the official files:
# MAIA github.com/Caput97/MAIA-Multimodal_AI_Assessment dataset/data_20%.json (e2f39f0);
# Hummus github.com/xiaoyuisrain/humorous-multimodal-metaphor-use (0ea085e);
# II-Bench github.com/II-Bench/II-Bench data/*.json (1cf741d);
# VAGUE the record layout of github.com/Hazel-Heejeong-Nam/VAGUE README (fbfdef7) and its readers.
# ViMU's files are gated: the keys its dataset card announces.
MAIA = "dataset/data_20%.json"
REAL_KEYS = {
    "maia": [
        (MAIA, "video"),
        (MAIA, "link"),
        (MAIA, "question_categories_A"),
        (MAIA, "question_categories_B"),
        (MAIA, "category"),
        (MAIA, "question"),
        (MAIA, "answer"),
        (MAIA, "true_statement"),
        (MAIA, "false_statement"),
    ],
    "hummus": [
        ("hummus_dataset.json", "*"),
        # a test pair takes caption and image from the test set: change them on a pair outside it
        ("hummus_dataset.json", "caption", "nyc-combi-27.caption"),
        ("hummus_dataset.json", "contest_number", "nyc-combi-27.contest_number"),
        *(
            ("hummus_dataset.json", k)
            for k in (
                "met_class",
                "bboxes",
                "bboxes.top",
                "bboxes.left",
                "bboxes.height",
                "bboxes.width",
                "caption_hl",
                "conceptual_metaphor",
                "bbox_labels",
                "figures",
                "explanation",
                "image_attributes.height",
                "image_attributes.width",
                "image_attributes.asset_type",
                "image_attributes.mime_type",
                "image_attributes.exif_rotation",
                "image_hl_desc",
                "complete",
                "text_hl",
                "solution",
            )
        ),
        *(("model_evaluation/test_set.json", k) for k in ("combi_id", "caption", "contest_number", "is_met")),
        *(("images/image_descriptions.csv", k) for k in ("contest_number", "image_description")),
    ],
    "iibench": [
        ("data/dev.json", "local_path"),
        *(("data/dev.json", f"questions.{k}") for k in ("id", "question", "options", "correct_option", "answer")),
        *(
            ("data/dev.json", f"meta_data.{k}")
            for k in ("image_type", "difficulty", "domain", "emotion", "rhetoric", "explanation")
        ),
        ("data/test.json", "meta_data.image_type"),  # a list there
    ],
    "vague": [
        *(("vcr_2_final.json", k) for k in ("image_name", "direct", "indirect", "solution")),
        *(
            ("vcr_2_final.json", f"mcq.{k}")
            for k in ("1_correct", "2_fake_scene", "3_surface_understanding", "4_wrong_entity", "ordering")
        ),
        *(
            ("vcr_2_final.json", f"meta.{k}")
            for k in ("caption", "ram_entity", "img_size", "person_bbox", "annot_link", "rating", "fake_caption")
        ),
    ],
    "vimu": [
        *(("metadata/open_ended_qa.jsonl", k) for k in ("video_id", "question", "answer", "reference_points")),
        ("metadata/rhetoric_mechanism_mcq.jsonl", "options"),
        ("metadata/rhetoric_mechanism_mcq.jsonl", "answer"),
    ],
}
UNITS = {  # unit -> offered (= imported) in the exact fixtures
    "maia": {"videos": 2, "questions": 48, "statement pairs": 384},
    "hummus": {"test pairs": 12},
    "iibench": {"questions": 4, "images": 4},
    "vague": {"records": 3},
    "vimu": {"questions": 4},
}


def _info(paper: str, d: Path) -> ReleaseInfo:
    return ReleaseInfo(paper, f"{paper}-exact", d, "v1", "CC BY 4.0", "it" if paper == "maia" else "en")


def _parse(paper: str, d: Path):
    return importlib.import_module(f"assets.recipes.{paper}.logic.release").parse_release(_info(paper, d))


def _fingerprint(parsed) -> str:
    return json.dumps(
        [
            parsed.items.sort_values("item_id").to_json(orient="records"),
            sorted((r.record, r.reason) for r in parsed.rejects),
            dict(parsed.notes),
            {k: dict(v) for k, v in parsed.unknown.items()},
        ],
        default=str,
    )


@pytest.mark.parametrize("paper", list(REAL_KEYS))
def test_exact_fixture_imports_with_zero_rejects(paper, exact_dirs):
    parsed = _parse(paper, exact_dirs[paper])
    assert parsed.rejects == [], [(r.record, r.reason, r.detail) for r in parsed.rejects]
    for unit, n in UNITS[paper].items():
        assert parsed.units[unit] == {"offered": n, "imported": n}
    assert len(parsed.items) and parsed.items["item_id"].is_unique
    assert all(p.startswith(f"media/releases/{paper}/") for ps in parsed.items["media_paths"] for p in ps)


def _first_path(obj, names: list[str], path=()):
    """The path of the first occurrence of the nested key ``names`` (a.b -> key b under key a)."""
    if isinstance(obj, dict):
        if names[0] in obj:
            if len(names) == 1:
                return (*path, names[0])
            sub = obj[names[0]]
            found = _first_path(sub[0] if isinstance(sub, list) and sub else sub, names[1:], ())
            if found is not None:
                return (*path, names[0], *((0,) if isinstance(sub, list) else ()), *found)
        for k, v in obj.items():
            if (found := _first_path(v, names, (*path, k))) is not None:
                return found
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            if (found := _first_path(v, names, (*path, i))) is not None:
                return found
    return None


def _changed(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 7
    if isinstance(v, str):  # reversed: tags and spans move, letters and names stop matching
        return v[::-1] + " (changed)"
    if isinstance(v, list) and v and not isinstance(v[0], (dict, list)):
        return [_changed(v[0]), *v[1:]]
    return None  # a container: the key is removed instead


def _perturb_json(data, key: str):
    if key == "*":  # the record id keying a JSON object
        first = next(iter(data))
        return {("changed-" + k if k == first else k): v for k, v in data.items()}
    path = _first_path(data, key.split("."))
    assert path is not None, f"the fixture lacks {key}: it must carry every real key"
    parent = data
    for p in path[:-1]:
        parent = parent[p]
    new = _changed(parent[path[-1]])
    if new is None:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return data


def _perturb_file(f: Path, key: str) -> None:
    if f.suffix == ".csv":
        rows = list(csv.DictReader(io.StringIO(f.read_text())))
        rows[0][key] = _changed(rows[0][key]) if key != "contest_number" else "99999"
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
        f.write_text(buf.getvalue())
    elif f.suffix == ".jsonl":
        rows = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        f.write_text("".join(json.dumps(r) + "\n" for r in _perturb_json(rows, key)))
    else:
        f.write_text(json.dumps(_perturb_json(json.loads(f.read_text()), key)))


@pytest.mark.parametrize("paper", list(REAL_KEYS))
def test_every_real_key_is_consumed_or_deliberately_ignored(paper, exact_dirs, tmp_path):
    module = importlib.import_module(f"assets.recipes.{paper}.logic.release")
    ignored = module.IGNORED_KEYS
    base = _fingerprint(_parse(paper, exact_dirs[paper]))
    original = {f: (exact_dirs[paper] / f).read_text() for f, *_ in REAL_KEYS[paper]}
    not_consumed = []
    for f, key, *where in REAL_KEYS[paper]:
        if key in ignored:
            continue
        _perturb_file(exact_dirs[paper] / f, where[0] if where else key)
        if _fingerprint(_parse(paper, exact_dirs[paper])) == base:
            not_consumed.append(f"{f}:{key}")
        (exact_dirs[paper] / f).write_text(original[f])
    assert not not_consumed, f"keys neither consumed nor in {paper} IGNORED_KEYS: {not_consumed}"
    # an ignored key must be a real one (the list is deliberate, not a catch-all)
    assert set(ignored) <= {k for _, k, *_ in REAL_KEYS[paper]}


def test_maia_official_json_items(exact_dirs):
    parsed = _parse("maia", exact_dirs["maia"])
    items = parsed.items
    oe, sv = items[items.task == "open_ended"], items[items.task == "statement_verification"]
    assert len(oe) == 48 and len(sv) == 384 and oe["category"].nunique() == 12
    assert (oe["references"].map(len) == 8).all()
    assert {json.loads(x)["slot"] for x in oe["labels"]} == {"a", "b"}
    labels = json.loads(oe.iloc[0]["labels"])
    assert labels["release_category"].endswith(("_A", "_B")) and labels["question_id"].startswith("video")
    # video1 -> dataset/videos/1.mp4; the YouTube link rides along
    assert {p[0] for p in items["media_paths"]} == {
        "media/releases/maia/maia-exact/1.mp4",
        "media/releases/maia/maia-exact/2.mp4",
    }
    assert json.loads(oe.iloc[0]["extra"])["video_url"].startswith("https://youtu.be/")
    # each pair: the i-th true vs the i-th false statement of its question, gold = the true one
    for opts, ans, lab in zip(sv["options"], sv["answer"], sv["labels"]):
        true = opts["AB".index(ans)]
        k = json.loads(lab)["pool_index"]
        assert "non fa" not in true and f"la cosa {k} " in true and f"la cosa {k} " in opts["BA".index(ans)]
    assert set(sv["answer"]) == {"A", "B"}  # seeded order, both positions used
    assert parsed.stats["questions per video and category"] == (2.0, 2.0)


def test_hummus_test_gold_comes_from_the_test_set(exact_dirs):
    d = exact_dirs["hummus"]
    test = json.loads((d / "model_evaluation" / "test_set.json").read_text())
    parsed = _parse("hummus", d)
    items = parsed.items
    cls = items[items.task == "classification"]
    by = {json.loads(e)["combi_id"]: row for e, row in zip(cls["extra"], cls.to_dict("records"))}
    test_cls = cls[cls["release_split"] == "test"]
    assert len(test_cls) == len(test) == 12
    for t in test:  # every test pair carries the test set's label
        row = by[t["combi_id"]]
        assert row["category"] == t["is_met"] and row["release_split"] == "test"
        assert row["answer"] == ("A" if t["is_met"] in ("Yes", "WIDLII") else "B")
    detail = {json.loads(e)["combi_id"] for e, task in zip(items["extra"], items["task"]) if task != "classification"}
    # relabelled WIDLII -> No: no detail task (positive pairs only); the dataset's verdict kept beside
    assert "nyc-combi-21" not in detail and json.loads(by["nyc-combi-21"]["extra"])["dataset_met_class"] == "WIDLII"
    # a Discard the test set calls Yes: classified, but it has no annotation to build the other tasks from
    assert by["nyc-combi-22"]["category"] == "Yes" and "nyc-combi-22" not in detail
    # a pair outside the test set makes no item (it would be assigned a split, test included):
    # the imported test split is exactly test_set.json
    assert "nyc-combi-27" not in by and parsed.notes["not_in_test_set"] == 1
    assert set(by) == {t["combi_id"] for t in test} and set(cls["release_split"]) == {"test"}
    assert detail == {"nyc-combi-11", "nyc-combi-12"}
    assert parsed.notes["test_label_differs_from_dataset"] == 2


def test_import_report_units_reasons_examples_and_paper_table(vague_dir, exact_dirs):
    from assets.recipes.vague.logic.release import parse_release

    bad = parse_release(ReleaseInfo("vague", "vague-2", vague_dir, "2.0", "x"))
    text = markdown(bad, "vague release vague-2")
    assert "| records | 5 | 2 | 3 |" in text
    for reason in ("incomplete_options", "bad_ordering", "media_missing"):
        assert f"| {reason} | 1 | vague_bench.json[" in text
    summary = bad.summary()
    assert summary["units"] == {"records": {"offered": 5, "imported": 2}}
    assert summary["reject_examples"]["media_missing"][0].startswith("vague_bench.json[4]: image")
    maia = markdown(_parse("maia", exact_dirs["maia"]), "maia")
    assert "| statement pairs | 384 | 384 | 0 |" in maia and "| questions | 48 | 2,400 |" in maia
    assert "| figure | this release | paper |" in maia


def test_report_keeps_three_examples_per_reason(exact_dirs):
    d = exact_dirs["iibench"]
    for f in ("dev.json", "test.json"):  # the public test.json withholds answers: every question a reject
        recs = json.loads((d / "data" / f).read_text())
        for r in recs:
            for q in r["questions"]:
                q.pop("answer"), q.pop("correct_option")
        (d / "data" / f).write_text(json.dumps(recs * 2))
    parsed = _parse("iibench", d)
    assert parsed.summary()["rejects_by_reason"]["no_gold_answer"] == 8
    assert len(parsed.summary()["reject_examples"]["no_gold_answer"]) == 3
    assert parsed.units["questions"] == {"offered": 8, "imported": 0}


def test_iibench_flat_rows_with_embedded_images(exact_dirs, tmp_path):
    """The hub's row layout (``id, question, option1..option6, answer``, labels as columns, the
    image embedded in an ``image`` column of a Parquet shard) imports like the repository's JSON."""
    d = exact_dirs["iibench"]
    rows = []
    for f in ("dev", "test"):
        for rec in json.loads((d / "data" / f"{f}.json").read_text()):
            q = rec["questions"][0]
            meta = {k: v if not isinstance(v, dict) else json.dumps(v) for k, v in rec["meta_data"].items()}
            image = {"bytes": (d / rec["local_path"]).read_bytes(), "path": None}
            opts = {f"option{k}": o for k, o in enumerate(q["options"], 1)}
            rows.append(
                (f, {"id": q["id"], "question": q["question"], **opts, "answer": q["answer"], "image": image, **meta})
            )
    hub = tmp_path / "hub" / "data"
    hub.mkdir(parents=True)
    for split in ("dev", "test"):
        pd.DataFrame([r for s, r in rows if s == split]).to_parquet(hub / f"{split}-00000-of-00001.parquet")
    repo, flat = _parse("iibench", d), _parse("iibench", hub.parent)
    assert flat.rejects == [] and flat.units["questions"] == {"offered": 4, "imported": 4}
    cols = ["question", "answer", "category", "release_split"]
    a = repo.items.sort_values("question")[cols + ["options"]].reset_index(drop=True)
    b = flat.items.sort_values("question")[cols + ["options"]].reset_index(drop=True)
    assert a[cols].equals(b[cols]) and [list(x) for x in a["options"]] == [list(x) for x in b["options"]]
    assert all(isinstance(v, bytes) for v in flat.media.values()) and len(flat.media) == 4
    from forge.releases.records import place_media

    assert place_media(flat.media, tmp_path / "data") == 4
    assert all((tmp_path / "data" / p).is_file() for ps in flat.items["media_paths"] for p in ps)


def test_maia_strings_stay_byte_identical(exact_dirs):
    """The official JSON has answers and true statements with a leading space (13 in
    data_20%.json); the imported items carry them exactly as released."""
    f = exact_dirs["maia"] / "dataset" / "data_20%.json"
    data = json.loads(f.read_text())
    q = data[0]["question_categories_A"][0]
    q["answer"][1] = " " + q["answer"][1]
    q["true_statement"][0] = " " + q["true_statement"][0] + " "
    q["question"] = q["question"] + " "
    f.write_text(json.dumps(data, ensure_ascii=False))
    items = _parse("maia", exact_dirs["maia"]).items
    refs = [r for refs in items["references"].dropna() for r in refs]
    opts = [o for os_ in items.loc[items.task == "statement_verification", "options"] for o in os_]
    assert q["answer"][1] in refs and q["answer"][1].lstrip() not in refs
    assert q["true_statement"][0] in opts and q["true_statement"][0].strip() not in opts
    assert q["question"] in set(items["question"])


def test_iibench_whole_clone_reads_release_data_only(exact_dirs):
    """A clone of the whole official repository also holds results/<model>_<split>_<mode>.jsonl:
    the records of data/test.json written back by infer/infer.py with each question's prompt and
    response. They are model replies, not release data: skipped whole, never offered or rejected."""
    d = exact_dirs["iibench"]
    base = _parse("iibench", d)
    test = json.loads((d / "data" / "test.json").read_text())
    (d / "results").mkdir()
    with (d / "results" / "some-model_test_none.jsonl").open("w") as f:
        for rec in test:
            qs = [{**q, "prompt": "Instruction: ...", "response": "(B)"} for q in rec["questions"]]
            f.write(json.dumps({**rec, "questions": qs}) + "\n")
    parsed = _parse("iibench", d)
    assert parsed.summary()["units"] == base.summary()["units"]
    assert sorted((r.record, r.reason) for r in parsed.rejects) == sorted((r.record, r.reason) for r in base.rejects)
    assert len(parsed.items) == len(base.items)
    assert parsed.notes["model_output_file_skipped"] == 1
    assert dict(parsed.unknown["model_output_file"]) == {"results/some-model_test_none.jsonl": 1}
