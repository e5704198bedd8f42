"""The human-gold switch: built items take enabled fields from a matching imported item, with
provenance per field; off by default, and nothing changes without a match."""

from __future__ import annotations

import json

import pandas as pd

from assets.recipes.hummus.logic.items import build_items
from assets.recipes.hummus.logic.release import parse_release as parse_hummus
from assets.recipes.maia.logic.release import parse_release as parse_maia
from forge.benchmarks import registry
from forge.gold.apply import apply_gold, with_gold
from forge.releases.config import ReleaseInfo, with_options


def _built_hummus(caption: str) -> pd.DataFrame:
    """What the recipe would build for the same cartoon and caption, with LLM annotations."""
    ann = {
        "verdict": "Yes",
        "metaphors": ["SHARKS ARE BOSSES"],
        "devices": [],
        "caption_origin": "source",
        "width": 100,
        "height": 100,
        "path": "media/images/x.png",
        "frame_id": "fr1",
        "item_id": "img1",
        "source": "contest",
        "channel": None,
        "batch": "contest-0000",
        "backend": "openai",
        "model": "gpt",
        "prompt_hash": "ph",
        "annotation_id": "a1",
        "caption": caption,
        "caption_highlighted": "<i>The quarterly review</i> is in the tank.",
        "explanation": "llm words",
    }
    regions = [
        {
            "label": "fish",
            "region_index": 0,
            "box_norm_top": 0.1,
            "box_norm_left": 0.1,
            "box_norm_height": 0.2,
            "box_norm_width": 0.2,
            "box_px_x0": 10,
            "box_px_y0": 10,
            "box_px_x1": 30,
            "box_px_y1": 30,
        }
    ]
    return pd.DataFrame(build_items(ann, regions))


def test_hummus_gold_fields_and_provenance(hummus_dir):
    imported = parse_hummus(ReleaseInfo("hummus", "hummus-v1", hummus_dir, "e08a44f", "CC BY 4.0")).items
    built = _built_hummus("The quarterly review is in the tank")  # final punctuation differs: still a match
    items = pd.concat([built, imported], ignore_index=True)
    out, counts = apply_gold(registry.get("hummus"), items, ["boxes", "spans", "descriptions"])
    b = out[out["origin"].isna()].set_index("task")
    assert counts == {"boxes": 2, "spans": 1, "descriptions": 6}
    assert b.loc["image_box", "answer"] == "shark: [0.500, 0.400, 0.500, 0.300]"
    assert b.loc["image_label", "answer"] == "shark"
    assert b.loc["caption_highlight", "answer"] == "<i>The quarterly review is in the tank.</i>"
    assert b.loc["naming", "answer"] == "SHARKS ARE BOSSES"  # metaphors not switched on: LLM kept
    prov = json.loads(b.loc["naming", "extra"])["provenance"]
    assert prov == {"boxes": "llm", "spans": "llm", "descriptions": "release:hummus-v1@e08a44f"}
    assert json.loads(b.loc["image_box", "extra"])["provenance"]["boxes"] == "release:hummus-v1@e08a44f"
    assert json.loads(b.loc["image_box", "labels"])["boxes"][0]["label"] == "shark"
    assert json.loads(b.loc["explanation", "extra"])["image_description"].startswith("A man in a suit")
    # imported rows untouched; nothing changes with the switch off or without a match
    pd.testing.assert_frame_equal(out[out["origin"].eq("imported")], items[items["origin"].eq("imported")])
    assert apply_gold(registry.get("hummus"), items, [])[0] is items
    other = pd.concat([_built_hummus("A caption nobody published."), imported], ignore_index=True)
    assert not apply_gold(registry.get("hummus"), other, ["boxes"])[1]


def test_maia_pools_and_config_switch(maia_info, tmp_path):
    imported = parse_maia(with_options(maia_info, require_media=False)).items
    q = imported[imported.task == "open_ended"].iloc[0]
    built = pd.DataFrame(
        [
            {
                "item_id": "b1",
                "benchmark": "maia",
                "task": "open_ended",
                "category": q["category"],
                "question": q["question"].upper(),
                "answer": "llm",
                "references": ["llm", "made"],
                "extra": json.dumps({"origin": "generated"}),
                "origin": None,
            }
        ]
    )
    items = pd.concat([built, imported], ignore_index=True)
    cfg = tmp_path / "releases.yaml"
    cfg.write_text("releases: []\ngold:\n  maia: {enabled: false, fields: [pools]}\n")
    assert with_gold(items, registry.get("maia"), str(cfg)).loc[0, "answer"] == "llm"
    cfg.write_text("releases: []\ngold:\n  maia: {enabled: true, fields: [pools]}\n")
    out = with_gold(items, registry.get("maia"), str(cfg))
    assert list(out.loc[0, "references"]) == list(q["references"]) and len(out.loc[0, "references"]) == 8
    assert json.loads(out.loc[0, "extra"])["provenance"] == {"pools": "release:maia-dev-ita@dev-20pct"}


def test_maia_statement_pairs_by_pool_position(maia_info):
    imported = parse_maia(with_options(maia_info, require_media=False)).items
    sv = imported[
        (imported.task == "statement_verification")
        & imported["labels"].map(lambda x: json.loads(x)["question_id"] == "1")
    ]
    pos3 = sv[sv["labels"].map(lambda x: json.loads(x)["pool_index"] == 3)].iloc[0]
    question = json.loads(pos3["extra"])["maia_question"]
    built = pd.DataFrame(
        [
            {
                "item_id": "b-sv",
                "benchmark": "maia",
                "task": "statement_verification",
                "category": "spatial_partial",
                "question": "Which of the two statements is true for the video?",
                "options": ["llm true", "llm foil"],
                "option_types": ["correct", "foil"],
                "answer": "A",
                "labels": json.dumps({"question_id": "q_x", "pool_index": 2}),  # the recipe's 0-based third
                "extra": json.dumps({"maia_question": question}),
                "origin": None,
            }
        ]
    )
    out, counts = apply_gold(registry.get("maia"), pd.concat([built, imported], ignore_index=True), ["statements"])
    assert counts == {"statements": 1}
    assert list(out.loc[0, "options"]) == list(pos3["options"]) and out.loc[0, "answer"] == pos3["answer"]


def test_switching_gold_on_marks_splits_gated_and_export_changed(tmp_path, monkeypatch):
    """Gold is a versioned step: its policy is part of the code version of every asset that reads
    items through it, so Dagster shows them changed (not up to date) when the switch flips."""
    from assets.splits.factory import benchmark_defs

    cfg = tmp_path / "releases.yaml"
    monkeypatch.setenv("SUBTEXT_RELEASES_CONFIG", str(cfg))

    def versions(paper: str, gold: str) -> dict[str, str]:
        cfg.write_text(f"releases: []\ngold:\n{gold}")
        return {a.key.path[-1]: a.code_versions_by_key[a.key] for a in benchmark_defs(paper).assets}

    off = versions("hummus", "  hummus: {enabled: false, fields: [boxes]}\n")
    assert set(off) == {"hummus_splits", "hummus_gated", "hummus_export"}
    assert versions("hummus", "  hummus: {enabled: false, fields: [spans]}\n") == off  # off is off
    on = versions("hummus", "  hummus: {enabled: true, fields: [boxes]}\n")
    assert all(on[k] != off[k] for k in off)
    more = versions("hummus", "  hummus: {enabled: true, fields: [boxes, spans]}\n")
    assert all(more[k] != on[k] for k in on)
    # a bare switch takes the paper's own default fields (its GoldRules, assets/recipes/hummus/logic/gold.py)
    bare = versions("hummus", "  hummus: {enabled: true}\n")
    assert bare == versions("hummus", "  hummus: {enabled: true, fields: [boxes, spans, descriptions]}\n") != on
    # another paper's switch leaves this paper's versions alone
    maia_off = versions("maia", "  hummus: {enabled: false, fields: [boxes]}\n")
    assert versions("maia", "  hummus: {enabled: true, fields: [boxes]}\n") == maia_off


def test_gold_step_applies_once_per_content(maia_info, tmp_path, monkeypatch):
    """``gold_items``: the items table read and gold applied once for every stage that reads them,
    again when the table or the switch changes; each caller gets its own copy."""
    import forge.gold.apply as gold
    from forge.storage import TableStore

    imported = parse_maia(with_options(maia_info, require_media=False)).items
    q = imported[imported.task == "open_ended"].iloc[0]
    built = {
        "item_id": "b1",
        "benchmark": "maia",
        "task": "open_ended",
        "category": q["category"],
        "question": q["question"],
        "answer": "llm",
        "references": ["llm", "made"],
        "extra": json.dumps({"origin": "generated"}),
        "origin": None,
    }
    store, spec = TableStore(tmp_path / "data"), registry.get("maia")
    store.write(spec.items_table, pd.concat([pd.DataFrame([built]), imported], ignore_index=True), part="b")
    cfg = tmp_path / "releases.yaml"
    cfg.write_text("releases: []\ngold:\n  maia: {enabled: true, fields: [pools]}\n")
    calls = []
    real = gold.apply_gold
    monkeypatch.setattr(gold, "apply_gold", lambda *a: calls.append(1) or real(*a))

    first = gold.gold_items(store, spec, cfg)
    assert len(first.loc[first.item_id == "b1", "references"].iloc[0]) == 8  # the pool taken from the release
    first.loc[:, "answer"] = "edited by a caller"
    again = gold.gold_items(store, spec, cfg)  # the splits' leakage check, the gates
    assert len(calls) == 1 and "edited by a caller" not in set(again["answer"])

    cfg.write_text("releases: []\ngold:\n  maia: {enabled: false, fields: [pools]}\n")  # the switch turned off
    off = gold.gold_items(store, spec, cfg)
    assert off.loc[off.item_id == "b1", "answer"].iloc[0] == "llm" and len(calls) == 1  # off: nothing applied

    cfg.write_text("releases: []\ngold:\n  maia: {enabled: true, fields: [pools]}\n")
    store.write(spec.items_table, pd.concat([pd.DataFrame([{**built, "item_id": "b2"}]), imported]), part="b")
    new = gold.gold_items(store, spec, cfg)  # a new items table: applied anew
    assert len(calls) == 2 and "b2" in set(new["item_id"]) and "b1" not in set(new["item_id"])
