"""Imported releases end to end in Dagster: the sensor registers and imports them, items land in
``<paper>_items`` (contracts pass), then splits (the release's test split kept) → gates →
export → evaluation, and the side-by-side report renders a table and a plot."""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
import yaml

from assets.recipes.hummus.release import defs as hummus_defs
from assets.recipes.maia.release import defs as maia_defs
from assets.splits.factory import benchmark_defs
from forge.storage import TableStore
from forge.storage.contracts import load_contract
from resources.embedder import EmbedderResource
from resources.llm import LLMResource
from resources.storage import StorageResource
from sensors.releases import release_sensor

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def world(tmp_path, releases_yaml, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    monkeypatch.delenv("SUBTEXT_EXPORT_FORCE_STUB", raising=False)
    store = TableStore(tmp_path / "data")
    resources = {
        "storage": StorageResource(data_dir=str(store.data_dir)),
        "llm": LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")),
        "embedder": EmbedderResource(),
    }
    return store, resources, dg.DagsterInstance.ephemeral()


def _md(result, key):
    return [m for m in result.get_asset_materialization_events() if m.asset_key.path[-1] == key][
        -1
    ].materialization.metadata


def _import(defs, paper, name, resources, instance):
    instance.add_dynamic_partitions(f"{paper}_releases", [name])
    asset = next(a for a in defs.assets if a.key.path[-1] == f"{paper}_release")
    return dg.materialize(
        [asset], partition_key=name, resources=resources, instance=instance, selection=[asset.key], raise_on_error=True
    )


def test_sensor_registers_each_release_once(world, releases_yaml):
    store, resources, instance = world
    sensor = release_sensor("maia")
    ctx = dg.build_sensor_context(instance=instance, resources={"storage": resources["storage"]})
    res = sensor(ctx)
    assert [r.partition_key for r in res.run_requests] == ["maia-dev-ita"]
    assert res.dynamic_partitions_requests[0].partition_keys == ["maia-dev-ita"]
    instance.add_dynamic_partitions("maia_releases", ["maia-dev-ita"])
    again = sensor(
        dg.build_sensor_context(instance=instance, cursor=res.cursor, resources={"storage": resources["storage"]})
    )
    assert not again.run_requests and not again.dynamic_partitions_requests
    # a release dropped into the inbox (not the media inbox: its name starts with "_") is picked up too
    drop = store.data_dir / "inbox" / "_releases" / "maia" / "maia-drop"
    drop.mkdir(parents=True)
    (drop / "gen.jsonl").write_text(
        json.dumps(
            {
                "id": 1,
                "video_id": "v9",
                "question_category": "Sentiment_A",
                "question": "Come si sente?",
                "answer1": "Bene.",
            }
        )
        + "\n"
    )
    third = sensor(
        dg.build_sensor_context(instance=instance, cursor=again.cursor, resources={"storage": resources["storage"]})
    )
    assert [r.partition_key for r in third.run_requests] == ["maia-drop"]


def test_imported_releases_reach_export_evaluation_and_report(world, tmp_path):
    store, resources, instance = world
    res = _import(maia_defs, "maia", "maia-dev-ita", resources, instance)
    assert all(c.passed for c in res.get_asset_check_evaluations())
    md = _md(res, "maia_release")
    summary = md["maia-dev-ita/summary"].value
    assert summary["items"] == 16 and summary["rejects_by_reason"] == {
        "missing_question": 1,
        "missing_video_id": 1,
        "bad_target": 1,
        "identical_statements": 1,
    }
    report = md["maia-dev-ita/report"].value  # the import report: units, reasons with examples, the paper's table
    assert "| unit | offered | imported | not imported |" in report and "| bad_target | 1 | mc.jsonl[" in report
    assert "| figure | this release | paper |" in report and summary["units"]["questions"]["offered"] == 7
    rej = store.read("rejects", where="stage = 'maia_release'")
    assert len(rej) == 4 and set(rej["partition"]) == {"maia-dev-ita"}
    assert (store.data_dir / "media" / "releases" / "maia" / "maia-dev-ita" / "v01.mp4").is_file()
    res = _import(hummus_defs, "hummus", "hummus-v1", resources, instance)
    assert all(c.passed for c in res.get_asset_check_evaluations())
    # re-importing replaces the release's rows, never duplicates them
    _import(hummus_defs, "hummus", "hummus-v1", resources, instance)
    hum = store.read("hummus_items")
    assert len(hum) == 14 and hum["item_id"].is_unique and set(store.parts("hummus_items")) == {"release__hummus-v1"}

    # a built MAIA set beside the imported one (what the recipe writes, origin left null)
    built = load_contract("maia_items")
    rows = [
        {
            "item_id": f"b{i}",
            "benchmark": "maia",
            "task": "open_ended",
            "category": "sentiment",
            "question": "How does the man feel at the end of the video?",
            "answer": "He is happy.",
            "references": ["He is happy.", "The man is glad.", "Cheerful.", "He smiles, pleased."],
            "media_paths": ["media/releases/maia/maia-dev-ita/v01_frames/f000.jpg"],
            "unit_id": f"clip{i}",
            "source_item_id": f"vid{i}",
            "source": "demo",
            "batch": "demo-0000",
            "backend": "openai",
            "model": "m",
            "prompt_hash": "p",
            "labels": json.dumps({"category": "sentiment"}),
        }
        for i in range(3)
    ]
    store.write("maia_items", built.conform(pd.DataFrame(rows)), "demo-0000", schema=built.arrow_schema())

    for paper in ("maia", "hummus"):
        defs = benchmark_defs(paper)
        sel = [a for a in defs.assets if a.key.path[-1].split("_")[-1] in ("splits", "gated", "export")]
        r = dg.materialize(
            [*sel, *defs.asset_checks], resources=resources, selection=[a.key for a in sel], raise_on_error=True
        )
        assert next(e for e in r.get_asset_check_evaluations() if e.check_name == "no_leakage_across_splits").passed
        assert _md(r, f"{paper}_export")["status"].value == "written"
        # the project's own checks pass on the imported items: none dropped for empty fields or missing media
        assert next(e for e in r.get_asset_check_evaluations() if e.check_name == "gate_empty_fields").passed
        res_ = store.read("gate_results", where=f"benchmark = '{paper}'")
        imported_ids = set(store.read(f"{paper}_items", where="origin = 'imported'")["item_id"])
        assert (
            imported_ids
            and not set(
                res_.loc[res_["reason"].isin(["media_missing", "empty_field", "contract_violation"]), "item_id"]
            )
            & imported_ids
        )
    sp = store.read("splits", parts=["hummus"]).merge(
        store.read("hummus_items")[["item_id", "release_split"]], on="item_id"
    )
    assert (sp.loc[sp["release_split"] == "test", "split"] == "test").all()  # the published test set stays test
    prov = [
        json.loads(x)
        for x in (store.data_dir / "exports" / "hummus" / "v1" / "provenance.jsonl").read_text().splitlines()
    ]
    assert {p["license"] for p in prov} == {"CC BY 4.0"}

    from assets.evals.assets import build_defs

    cfg = yaml.safe_load((ROOT / "config" / "evals.yaml").read_text())
    cfg["bootstrap"]["n"] = 20
    (tmp_path / "evals.yaml").write_text(yaml.safe_dump(cfg))
    edefs = build_defs(ROOT / "config" / "models.yaml", tmp_path / "evals.yaml")
    sel = [a for a in edefs.assets if a.key.path[-1] in ("maia_eval", "hummus_eval")]
    r = dg.materialize(
        sel, partition_key="stub-offline", resources=resources, selection=[a.key for a in sel], raise_on_error=True
    )
    preds = store.read("eval_predictions")
    imported = set(store.read("maia_items", where="origin = 'imported'")["item_id"]) | set(hum["item_id"])
    assert set(preds["item_id"]) & imported
    assert {"text_description"} <= set(preds.loc[preds.benchmark == "hummus", "setting"])  # §6.3 from the release

    rep = next(a for a in maia_defs.assets if a.key.path[-1] == "maia_release_report")
    r = dg.materialize([rep], resources=resources, selection=[rep.key], raise_on_error=True)
    md = _md(r, "maia_release_report")
    table = md["side_by_side"].value
    assert "| figure | built | release:maia-dev-ita | paper |" in table
    assert "answer_pool/ttr_cw" in table and "position/A" in table and "question_tokens/mean" in table
    assert "| statement pairs |" in md["import/maia-dev-ita"].value  # the import report, the paper's figures beside
    assert md["plot"].value.startswith("![maia side by side](data:image/png;base64,")
    assert Path(md["plot_path"].value).is_file()
    csv = pd.read_csv(store.data_dir / "reports" / "releases" / "maia_side_by_side.csv", index_col=0)
    assert csv.loc["language", "release:maia-dev-ita"] == "it" and csv.loc["language", "built"] == "en"
    rep = next(a for a in hummus_defs.assets if a.key.path[-1] == "hummus_release_report")
    md = _md(
        dg.materialize([rep], resources=resources, selection=[rep.key], raise_on_error=True), "hummus_release_report"
    )
    assert "label/WIDLII" in md["side_by_side"].value and "plot" in md


@pytest.mark.parametrize(
    "paper, name, fixture, n_items",
    [
        ("iibench", "ii-bench", "iibench_dir", 2),
        ("vague", "vague-2", "vague_dir", 2),
        ("vimu", "vimu-v1", "vimu_dir", 4),
    ],
)
def test_other_importers_write_contract_valid_items(paper, name, fixture, n_items, request, tmp_path, monkeypatch):
    import importlib

    d = request.getfixturevalue(fixture)
    cfg = tmp_path / f"{paper}.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {"releases": [{"paper": paper, "name": name, "path": str(d), "version": "1", "licence": "CC BY 4.0"}]}
        )
    )
    monkeypatch.setenv("SUBTEXT_RELEASES_CONFIG", str(cfg))
    store = TableStore(tmp_path / "data")
    defs = importlib.import_module(f"assets.recipes.{paper}.release").defs
    res = _import(
        defs, paper, name, {"storage": StorageResource(data_dir=str(store.data_dir))}, dg.DagsterInstance.ephemeral()
    )
    assert all(c.passed for c in res.get_asset_check_evaluations())
    items = store.read(f"{paper}_items")
    assert len(items) == n_items and set(items["origin"]) == {"imported"} and set(items["licence"]) == {"CC BY 4.0"}
    assert all((store.data_dir / p).is_file() for ps in items["media_paths"] for p in ps)
    assert len(store.read("rejects", where=f"stage = '{paper}_release'")) == 3
