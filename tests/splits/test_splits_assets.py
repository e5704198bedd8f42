"""The per-recipe assets end to end: splits → gates (blind solver through the LLM double) →
export, loaded back with ``datasets.load_dataset``; stub refusal and force; versioning."""

import json
import os

import dagster as dg
import pandas as pd
import pytest

from assets.splits.factory import benchmark_defs
from forge.benchmarks import registry
from forge.splits.config import stage_settings
from forge.splits.stages import leakage_check
from forge.storage import TableStore, open_catalog
from resources.llm import LLMResource
from resources.storage import StorageResource
from tests.llm_double.server import message_text
from tests.splits.helpers import make_world

PAPER = "vague"  # blind policy drop, per item; options may be balanced


def _specs(n=24, backend="openai"):
    out = []
    for i in range(n):
        easy = i % 4 == 0
        out.append(
            {
                "item_id": f"it{i:02d}",
                "category": ["irony", "metaphor", "humour"][i % 3],
                "source_item_id": f"v{i // 2:02d}",
                "img": 100 + i,
                "backend": backend,
                "uploader": "up" if i < 4 else None,
                "license": "CC BY 4.0" if (i // 2) % 2 else None,
                "question": f"{'EASY ' if easy else ''}What does picture {i} imply?",
            }
        )
    return out


def solver(body):
    """Text-only double: answers EASY items correctly (the gold is always A here), others wrongly."""
    if (body.get("response_format") or {}).get("json_schema", {}).get("name") != "blind_solver":
        return None
    text = message_text(body)
    assert "image_url" not in json.dumps(body["messages"])  # no image is ever sent
    return {"answer": "A" if "EASY" in text else "D"}


def _run(store, llm, run_config=None, select=("splits", "gated", "export"), paper=PAPER, raise_on_error=True):
    defs = benchmark_defs(paper)
    assets = [a for a in defs.assets if any(a.key.path[-1].endswith(s) for s in select)]
    return dg.materialize(
        [*assets, *defs.asset_checks],
        resources={"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm},
        run_config=run_config or {},
        raise_on_error=raise_on_error,
        selection=[a.key for a in assets],
    )


def _check(result, name):
    evs = [e for e in result.get_asset_check_evaluations() if e.check_name == name]
    assert evs, name
    return evs[-1]


def _md(result, key):
    mats = [m for m in result.get_asset_materialization_events() if m.asset_key.path[-1] == key]
    return mats[-1].materialization.metadata


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf_cache"))
    monkeypatch.delenv("SUBTEXT_EXPORT_FORCE_STUB", raising=False)
    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "advisory")  # these tests are about splits, not review
    return TableStore(tmp_path / "data")


def test_probe_reports_export_roundtrip_and_versioning(store, llm_double, llm_double_resource):
    """Default settings (the papers'): one test split, the text-only probe reports and drops
    nothing, stops sampling an item once its verdict is decided, and never probes twice."""
    specs = _specs()
    for s in specs:  # items made by the demo profile: the card must say so
        s["columns"] = {"profile": "demo"}
    make_world(store, specs, benchmark=PAPER)
    llm_double.responder = solver
    llm = llm_double_resource()
    res = _run(store, llm)
    assert res.success

    sp = store.read("splits")
    assert set(sp["split"]) == {"test"} and len(sp) == 24  # VAGUE has no dev split
    assert _check(res, "no_leakage_across_splits").passed
    assert _md(res, "vague_splits")["cross_split_linked_pairs"].value == 0

    # EASY items (6 of 24) are right every time: flagged after 4 trials (4/4 cannot fall below
    # the test); the others are wrong: decided after 2 (at most 3/5 is left, never flagged).
    assert len(llm_double.chat_requests) == 6 * 4 + 18 * 2 < 24 * 5
    gr = store.read("gate_results").set_index("item_id")
    easy = [f"it{i:02d}" for i in range(0, 24, 4)]
    assert (gr["status"] == "kept").all()  # report: nothing dropped for being text-solvable
    assert gr.loc[easy, "blind_flagged"].all() and not gr.drop(index=easy)["blind_flagged"].any()
    assert (gr.loc[easy, "blind_trials"] == 4).all() and (gr.drop(index=easy)["blind_trials"] == 2).all()
    md = _md(res, "vague_gated")
    assert md["blind_accuracy_before"].value == md["blind_accuracy_after"].value == round(24 / 60, 4)
    assert "| task=mcq |" in md["blind_accuracy"].value and "| category=irony |" in md["blind_accuracy"].value
    blind = _check(res, "gate_blind_solvability")
    assert blind.passed and blind.metadata["dropped"].value == 0 and blind.metadata["flagged_items"].value == 6
    assert blind.metadata["requests"].value == 60 and blind.metadata["trials_saved"].value == 60
    cost = blind.metadata["cost"].value  # what the probe cost, stated
    assert cost["requests"] == cost["paid_calls"] == 60 and cost["share_of_benchmark_requests"] == 1.0
    assert blind.metadata["guess_drop_probability"].value == {"k=4": 0.015625}
    # every answer was A: the position gate re-shuffled and balanced the split
    assert _check(res, "gate_position_balance").passed
    gi = store.read("gated_items")
    assert len(gi) == 24 and gi["answer"].nunique() == 4
    assert all(r["options"][ord(r["answer"]) - 65].startswith("right ") for _, r in gi.iterrows())
    assert set(gi.loc[gi["blind_flagged"].astype(bool), "item_id"]) == set(easy)  # a column to filter on
    calls = store.read("llm_calls")
    assert set(calls["stage"]) == {"blind_solver"} and set(calls["partition"]) == {PAPER}

    # a re-run of the gate does not probe again (one probe per model and text)
    _run(store, llm, select=("gated",))
    assert len(llm_double.chat_requests) == 60

    # export: imagefolder JSONL + parquet + media + provenance + card, loadable offline
    ex = store.read("exports")
    assert len(ex) == 1 and ex.iloc[0]["version"] == "v1" and ex.iloc[0]["n_items"] == 24
    v1 = store.data_dir / "exports" / PAPER / "v1"
    for f in [
        "README.md",
        "provenance.jsonl",
        "manifest.json",
        "plots/category_distribution.png",
        "plots/answer_positions.png",
    ]:
        assert (v1 / f).is_file(), f
    import datasets

    cache = str(store.data_dir.parent / "hf_cache")
    ds = datasets.load_dataset(str(v1), cache_dir=cache)
    assert sorted(ds.keys()) == sorted(json.loads(ex.iloc[0]["splits"]))
    assert sum(len(ds[s]) for s in ds) == 24
    row = ds["test"][0]
    assert row["images"][0].size == (64, 64)  # decoded PIL image from the copied media
    assert row["question"] and len(row["options"]) == 4 and row["answer"] in "ABCD"
    tab = datasets.load_dataset(
        "parquet", data_files={s: str(v1 / "parquet" / f"{s}.parquet") for s in ds}, cache_dir=cache
    )
    assert sum(len(tab[s]) for s in tab) == 24 and (v1 / tab["test"][0]["file_names"][0]).is_file()
    flagged = {r["item_id"] for r in tab["test"] if r["blind_flagged"]}  # typed blind columns in the export
    assert flagged == set(easy) and all(r["blind_trials"] in (2, 4) for r in tab["test"])
    prov = [json.loads(x) for x in (v1 / "provenance.jsonl").read_text().splitlines()]
    assert {p["license"] for p in prov} == {"CC BY 4.0", None} and prov[0]["url"].startswith("http://x/")
    card = (v1 / "README.md").read_text()
    assert "CC BY 4.0" in card and "unknown" in card and "FORCED STUB" not in card
    assert "per accepted item" in card and "First version." in card and "| irony |" in card
    assert "## Text-only (blind) accuracy" in card and "| category=irony |" in card and "**report**" in card
    from forge.benchmarks.settings import config_path, settings_hash

    assert f"`demo` (effective settings sha256 {settings_hash(config_path(PAPER), 'demo')})" in card
    assert all(json.loads(e)["profile"] == "demo" for e in store.read("gated_items")["extra"])

    # unchanged rebuild → no new version; v1 stays byte-identical
    before = {p: p.read_bytes() for p in v1.rglob("*") if p.is_file()}
    res2 = _run(store, llm, select=("export",))
    assert _md(res2, "vague_export")["status"].value == "unchanged"
    assert len(store.read("exports")) == 1
    # a changed item set → v2, the card says what changed, v1 untouched
    items = store.read("vague_items")
    items = items[items["item_id"] != "it01"]
    store.write("vague_items", items, "demo-0000")
    res3 = _run(store, llm)
    assert _md(res3, "vague_export")["version"].value == "v2"
    card2 = (store.data_dir / "exports" / PAPER / "v2" / "README.md").read_text()
    assert "Since v1: 0 added, 1 removed" in card2 and "it01" in card2
    assert {p: p.read_bytes() for p in v1.rglob("*") if p.is_file()} == before
    assert len(llm_double.chat_requests) == 60  # blind answers came from the cache
    assert _check(res3, "export_integrity").passed
    # catalog views over the new tables

    with open_catalog(store) as con:
        assert con.execute("select sum(items) from split_summary where benchmark = 'vague'").fetchone()[0] == 23
        assert con.execute("select version from latest_exports where benchmark = 'vague'").fetchone()[0] == "v2"
        assert con.execute("select sum(items) from gate_summary where status = 'kept'").fetchone()[0] == 23
    # tampering with a written version is detected
    f = v1 / "provenance.jsonl"
    os.chmod(f, 0o644)
    f.write_text("tampered\n")
    assert not _check(_run(store, llm, select=("export",)), "export_integrity").passed


def test_stub_items_refused_unless_forced(store, tmp_path):
    make_world(store, _specs(8, backend="stub"), benchmark=PAPER)
    llm = LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite"))
    res = _run(store, llm, raise_on_error=False)
    assert not res.success  # a refused export fails the step (and so the run)
    failure = next(e for e in res.all_events if e.is_step_failure)
    assert failure.step_key == f"{PAPER}_export" and "stub" in failure.event_specific_data.error.message
    assert not (store.data_dir / "exports" / PAPER).exists()
    # the stub blind solver answers at random: nothing dropped for it
    assert "stub" in _check(res, "gate_blind_solvability").metadata["note"].value
    assert (store.read("gate_results")["reason"] != "blind_solvable").all()

    res = _run(store, llm, run_config={"ops": {"vague_export": {"config": {"force_stub": True}}}}, select=("export",))
    md = _md(res, "vague_export")
    assert md["status"].value == "written"
    card = (store.data_dir / "exports" / PAPER / "v1" / "README.md").read_text()
    assert "FORCED STUB EXPORT" in card
    assert "estimated, nothing billed" in card and "per accepted item**" not in card  # stub calls cost $0
    # the card as the UI shows it: plots inlined (a relative path 404s there), the version filled in
    ui = md["card"].value
    assert "](plots/" not in ui and ui.count("](data:image/png;base64,") >= 1
    assert "<version>" not in card and "<version>" not in ui and f"exports/{PAPER}/v1" in ui
    assert "estimated, nothing billed" in ui
    assert bool(store.read("exports").iloc[0]["forced_stub"])


def test_empty_or_missing_items_complete_with_a_note(store, tmp_path):
    llm = LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite"))
    res = _run(store, llm)
    assert res.success
    for key in ("vague_splits", "vague_gated", "vague_export"):
        assert "note" in _md(res, key), key
    assert store.read("splits").empty and store.read("exports").empty


def test_leak_check_fails_on_hand_made_leaking_split(store):
    make_world(
        store,
        [
            {"item_id": "a", "category": "x", "source_item_id": "v1", "img": 1},
            {"item_id": "b", "category": "x", "source_item_id": "v1", "img": 2},
            {"item_id": "c", "category": "x", "source_item_id": "v2", "img": 3},
            {"item_id": "d", "category": "x", "source_item_id": "v3", "img": 3, "brighten": 5},
        ],
        benchmark=PAPER,
    )
    rows = pd.DataFrame(
        {
            "benchmark": PAPER,
            "item_id": list("abcd"),
            "split": ["dev", "test", "dev", "test"],
            "group_id": list("abcd"),
            "group_size": 1,
            "seed": 0,
            "version": "hand",
        }
    )
    from forge.storage.contracts import load_contract

    c = load_contract("splits")
    store.write("splits", c.conform(rows), PAPER, schema=c.arrow_schema())
    r = leakage_check(store, registry.get(PAPER), stage_settings(registry.get(PAPER)))
    assert not r.passed
    assert r.metadata["pairs_by_kind"]["source_item_id"] == 1
    assert r.metadata["near_duplicate_pairs"] >= 1


@pytest.mark.parametrize("paper", registry.names())
def test_factory_gives_every_recipe_the_same_shape(paper):
    defs = benchmark_defs(paper)
    keys = sorted(k.path[-1] for a in defs.assets for k in a.keys)
    assert keys == sorted(f"{paper}_{s}" for s in ("splits", "gated", "export"))
    checks = sorted(spec.name for a in defs.assets for spec in a.check_specs)
    checks += [spec.name for c in defs.asset_checks for spec in c.check_specs]
    ref = benchmark_defs("maia")
    ref_checks = sorted(spec.name for a in ref.assets for spec in a.check_specs)
    ref_checks += [spec.name for c in ref.asset_checks for spec in c.check_specs]
    assert checks == ref_checks
    split_asset = next(a for a in defs.assets if a.key.path[-1] == f"{paper}_splits")
    assert dg.AssetKey(f"{paper}_items") in split_asset.dependency_keys


def _export_rows(store, paper):
    import pyarrow.parquet as pq

    root = store.data_dir / "exports" / paper / "v1" / "parquet"
    return pd.concat([pq.read_table(p).to_pandas() for p in sorted(root.glob("*.parquet"))], ignore_index=True)


def test_maia_pools_are_never_split_and_blind_reports_per_pool(store, llm_double, llm_double_resource):
    """Two pools of 4 TS/FS pairs + their open question. Pool q1 is text-solvable (the double
    answers its pairs right every time): flagged per pool and kept (report). Pool q2 has one
    malformed pair: the whole pool, open question included, is dropped."""
    specs = []
    for q, vid in (("q1", "v1"), ("q2", "v2")):
        for p in range(4):
            opts = [f"true {q}{p}", "" if (q == "q2" and p == 1) else f"false {q}{p}"]
            specs.append(
                {
                    "item_id": f"{q}_sv{p}",
                    "category": "causal",
                    "source_item_id": vid,
                    "img": 10 + p,
                    "task": "statement_verification",
                    "options": opts,
                    "option_types": ["correct", "foil"],
                    "question": f"{'EASY ' if q == 'q1' else ''}Which statement is true?",
                    "labels": {"category": "causal", "question_id": q},
                }
            )
        specs.append(
            {
                "item_id": f"{q}_oe",
                "category": "causal",
                "source_item_id": vid,
                "img": 30,
                "task": "open_ended",
                "options": None,
                "option_types": None,
                "answer": "to catch the bus",
                "question": f"Why does the man run ({q})?",
                "labels": {"category": "causal", "question_id": q},
            }
        )
    make_world(store, specs, benchmark="maia")

    def pool_solver(body):
        return {"answer": "A" if "EASY" in message_text(body) else "B"}

    llm_double.responder = pool_solver
    res = _run(store, llm_double_resource(), select=("splits", "gated"), paper="maia")
    assert res.success
    sp = store.read("splits")
    for q in ("q1", "q2"):
        assert sp[sp["item_id"].str.startswith(q)]["split"].nunique() == 1  # a split never cuts a pool
    gr = store.read("gate_results").set_index("item_id")
    q2 = [i for i in gr.index if i.startswith("q2")]
    assert gr.loc["q2_sv1", "reason"] == "empty_field"
    assert set(gr.loc[[i for i in q2 if i != "q2_sv1"], "reason"]) == {"unit_member_dropped"}
    q1 = [i for i in gr.index if i.startswith("q1")]
    assert (gr.loc[q1, "status"] == "kept").all()  # report: nothing dropped for blindness
    assert gr.loc["q1_sv0", "blind_flagged"] and gr.loc["q1_sv0", "blind_chance"] == round(0.5**4, 6)
    assert set(gr.loc[q1, "unit_id"]) == {"question_id=q1"}
    for _, g in gr.groupby("unit_id"):  # a gate never splits a pool
        assert g["status"].nunique() == 1
    check = _check(res, "gate_blind_solvability")
    assert check.passed and check.metadata["flagged_units"].value == 1 and check.metadata["unit"].value == "pool"
    # only q1's pairs were sent, and only until the pool's verdict was decided (3/3 right: flagged)
    assert check.metadata["cost"].value["requests"] == 4 * 3
    assert "pool of 4" in check.metadata["guess_drop_probability"].value


def test_vimu_options_keep_their_order_through_gates_and_export(store, llm_double, llm_double_resource):
    letters = "ABCDE"
    specs = [
        {
            "item_id": f"rm{i:02d}",
            "category": ["RM", "SV", "EG"][i % 3],
            "source_item_id": f"v{i:02d}",
            "img": 200 + i,
            "task": "multi_select",
            "options": [f"taxonomy group {x}" for x in letters],
            "option_types": ["correct" if x == "A" else "distractor" for x in letters],
            "answer": "A" if i % 3 else "A,C",
        }
        for i in range(18)
    ]
    make_world(store, specs, benchmark="vimu")
    res = _run(
        store,
        llm_double_resource(),
        paper="vimu",
        run_config={"ops": {"vimu_export": {"config": {"force_stub": False}}}},
    )
    assert res.success
    # the probe reports (a text-only baseline), text only, and drops nothing
    assert llm_double.chat_requests and all("image_url" not in json.dumps(b) for b in llm_double.chat_requests)
    gi = store.read("gated_items")
    assert (
        len(gi) == 18 and gi["blind_trials"].notna().all() and set(gi["answer"]) == {"A", "A,C"}
    )  # every single answer still A
    assert (store.read("gate_results")["reshuffled"] == False).all()  # noqa: E712
    assert _check(res, "gate_position_balance").metadata["reshuffled"].value == 0
    rows = _export_rows(store, "vimu")
    assert len(rows) == 18
    for r in rows.itertuples():
        assert list(r.options) == [f"taxonomy group {x}" for x in letters], r.item_id


def test_the_force_stub_run_flag_is_not_part_of_the_export_code_version(monkeypatch):
    """The demo sets SUBTEXT_EXPORT_FORCE_STUB; the UI process does not. A run flag in the
    code version would leave every export Unsynced right after the demo."""
    from assets.splits.factory import benchmark_defs

    def export_version(bench: str) -> str | None:
        key = dg.AssetKey(f"{bench}_export")
        [a] = [a for a in benchmark_defs(bench).assets if isinstance(a, dg.AssetsDefinition) and key in a.keys]
        return a.code_versions_by_key[key]

    monkeypatch.delenv("SUBTEXT_EXPORT_FORCE_STUB", raising=False)
    plain = export_version("vague")
    monkeypatch.setenv("SUBTEXT_EXPORT_FORCE_STUB", "1")
    assert export_version("vague") == plain
    assert plain is not None
