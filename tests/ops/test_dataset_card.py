"""A complete Hugging Face dataset card, and typed features `datasets` loads offline: Hub
metadata (license other + license_name / license_link, task and size categories, language,
typed features), what it measures, example items as a picture, uses and limitations, the
paper's citation; `labels` / `extra` as structs, not JSON text; the stub warning first."""

import json

import pandas as pd
import pytest
import yaml

from forge.benchmarks import registry
from forge.evals.pipeline import load_export
from forge.export.write import write_export
from tests.evals.test_e2e import CARD, build_items


def _export(tmp_path, bench: str, forced_stub: bool = False):
    data = tmp_path / "data"
    df = build_items(data)[bench]
    df = df.assign(split=["test" if i % 2 else "dev" for i in range(len(df))], group_id=lambda d: d["item_id"])
    out = write_export(
        exports_dir=data / "exports",
        data_dir=data,
        spec=registry.get(bench),
        items=df,
        provenance=pd.DataFrame(columns=["item_id", "source_item_id", "license", "source"]),
        split_order=["dev", "test"],
        stage_config={},
        card_context=dict(CARD, title=bench),
        forced_stub=forced_stub,
        stub_items=len(df) if forced_stub else 0,
    )
    return data, df, out.path


def _front(card: str) -> dict:
    return yaml.safe_load(card.split("---\n")[1])


@pytest.mark.parametrize("bench", ["iibench", "vimu"])
def test_datasets_loads_typed_features_the_card_declares(tmp_path, bench):
    datasets = pytest.importorskip("datasets")
    data, items, path = _export(tmp_path, bench)
    ds = datasets.load_dataset(str(path), cache_dir=str(tmp_path / "hf"))
    front = _front((path / "README.md").read_text())
    assert front["dataset_info"]["features"] == ds["test"].features._to_yaml_list()  # the card tells the truth
    row = ds["test"][0]
    assert len(row["images"]) >= 1 and row["images"][0].size[0] > 0
    by_id = {r["item_id"]: r for r in items.to_dict("records")}
    original = by_id[row["item_id"]]
    for col in ("labels", "extra"):
        want = json.loads(original[col]) if isinstance(original[col], str) and original[col] else {}
        got = row[col]
        if want:  # a struct, every key typed as the item had it
            assert isinstance(got, dict) and {k: v for k, v in got.items() if v is not None and k in want}
            for k, v in want.items():
                assert got[k] == v or (isinstance(v, dict) and json.loads(got[k]) == v), (col, k)
    # evaluation reads the export as before: labels / extra as the items' JSON text
    back = load_export(data / "exports", registry.get(bench)).items.set_index("item_id")
    for iid, r in by_id.items():
        for col in ("labels", "extra"):
            want = json.loads(r[col]) if isinstance(r[col], str) and r[col] else {}
            got = back.at[iid, col]
            assert (json.loads(got) if got else {}) == {k: v for k, v in want.items() if v is not None}


def test_the_card_has_every_hub_field_and_section(tmp_path):
    data, items, path = _export(tmp_path, "iibench", forced_stub=True)
    card = (path / "README.md").read_text()
    front = _front(card)
    assert front["license"] == "other" and front["license_name"] and (path / front["license_link"]).is_file()
    assert front["language"] == ["en"] and front["size_categories"] == ["n<1K"]
    assert {"multiple-choice", "visual-question-answering"} <= set(front["task_categories"])
    labels = next(f for f in front["dataset_info"]["features"] if f["name"] == "labels")
    assert {"name": "rhetoric", "list": "string"} in labels["struct"]
    body = card.split("---\n", 2)[2]
    first_text = [ln for ln in body.splitlines() if ln.strip() and not ln.startswith("# ")][0]
    assert first_text.startswith("> **WARNING — FORCED STUB EXPORT.**")  # still the first thing read
    for section in ("## What it measures", "## Example items", "## Uses and limitations", "## Citation"):
        assert section in body, section
    assert "@inproceedings{liu2024iibench" in body and "2406.05862" in body
    assert (path / "plots" / "examples.png").stat().st_size > 1000
    assert body.index("## Example items") < body.index("## Statistics")


def test_an_italian_export_says_so(tmp_path):
    from forge.export.hub import languages, size_category

    df = pd.DataFrame({"question": ["Che cosa fa la persona nel video e perché lo fa?"] * 3})
    assert languages(df) == ["it"]
    assert [size_category(n) for n in (0, 999, 1000, 250_000)] == ["n<1K", "n<1K", "1K<n<10K", "100K<n<1M"]
