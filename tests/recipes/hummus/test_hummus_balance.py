"""Hummus Yes/No balance after annotation failures (issue 17): a pair whose detailed annotation
fails keeps its classification item (paper default), or, with ``drop_balanced``, is dropped
together with negatives so the batch's positive share stays what it was."""

import dagster as dg
import pytest

from assets.recipes.hummus.logic import items as H
from resources.storage import StorageResource
from tests.llm_double.server import message_text
from tests.recipes.hummus.test_hummus_assets import image_store

BATCH = "capcon-0001"
# 4 positives (2 of them always fail the span check) and 4 negatives
CAPTIONS = {f"y{k}": f"My boss {k} is a shark." for k in range(2)}
CAPTIONS |= {f"f{k}": f"Their marriage {k} is a zoo." for k in range(2)}
CAPTIONS |= {f"n{k}": f"Nice weather {k} today." for k in range(4)}


@pytest.fixture
def store(tmp_path):
    return image_store(tmp_path, CAPTIONS, BATCH)


def responder(body):
    if (body.get("response_format") or {}).get("json_schema", {}).get("name") != "hummus_annotate":
        return None
    text = message_text(body)
    base = {"incongruities": ["odd"], "resolution": "caption", "devices": [], "discard_reason": ""}
    if "weather" in text:
        return base | {"verdict": "No", "metaphors": [], "regions": [], "caption_highlighted": "", "explanation": ""}
    cap = next(c for c in CAPTIONS.values() if c in text)
    span = "shark" if "shark" in cap else "circus"  # "circus" is not in the caption: invalid_span, every round
    return base | {
        "verdict": "Yes",
        "metaphors": ["WORK IS HUNTING"],
        "regions": [{"label": "fin", "box": [0.1, 0.1, 0.5, 0.5]}],
        "caption_highlighted": cap.replace("shark", "<i>shark</i>") if span == "shark" else f"<i>{span}</i>",
        "explanation": "The fin makes the boss a predator.",
    }


def _run(store, llm, policy):
    from assets.recipes.hummus import assets as A

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    return dg.materialize(
        [A.hummus_pairs, A.hummus_annotations, A.hummus_items],
        partition_key=BATCH,
        instance=instance,
        run_config={
            "ops": {
                "hummus_annotations": {"config": {"max_rounds": 1}},
                "hummus_items": {"config": {"on_detail_failure": policy}},
            }
        },
        resources={"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm},
    )


@pytest.mark.parametrize("policy", [H.KEEP_CLASSIFICATION, H.DROP_BALANCED])
def test_balance_holds_after_injected_annotation_failures(store, llm_double, llm_double_resource, policy):
    llm_double.responder = responder
    assert _run(store, llm_double_resource(), policy).success
    ann = store.read("hummus_annotations").set_index("frame_id")
    assert sorted(ann[ann["detail_reject"].notna()].index) == ["img_f0", "img_f1"]
    assert (ann.loc[["img_f0", "img_f1"], "detail_reject"] == "invalid_span").all()

    items = store.read("hummus_items")
    cls = items[items["task"] == "classification"]
    n_pos, n_neg = int((cls["answer"] == "A").sum()), int((cls["answer"] == "B").sum())
    assert n_pos == n_neg  # 4 + 4 annotated: the share stays 1/2 either way
    detail_units = set(items[items["task"] != "classification"]["unit_id"])
    assert detail_units == {"img_y0", "img_y1"}  # the failed pairs never reach the detail tasks

    rej = store.read("rejects")
    rej = rej[rej["stage"] == "hummus_items"]
    failed_ids = {H.item_id(ann.loc[f, "annotation_id"], t) for f in ("img_f0", "img_f1") for t in H.DETAIL_TASKS}
    assert failed_ids <= set(rej[rej["reason"] == "invalid_span"]["item_id"])
    partners = rej[rej["reason"] == H.BALANCE_PARTNER_DROPPED]
    if policy == H.KEEP_CLASSIFICATION:
        assert (n_pos, n_neg) == (4, 4) and partners.empty
        assert set(cls["unit_id"]) >= {"img_f0", "img_f1"}
    else:
        assert (n_pos, n_neg) == (2, 2) and len(partners) == 2
        assert not set(cls["unit_id"]) & {"img_f0", "img_f1"}
        cls_of_failed = {H.item_id(ann.loc[f, "annotation_id"], "classification") for f in ("img_f0", "img_f1")}
        assert set(partners["related_id"]) == cls_of_failed
        assert cls_of_failed <= set(rej[rej["reason"] == "invalid_span"]["item_id"])


def _ann(i, verdict, failed=False):
    return {
        "annotation_id": f"hma_{i:03d}",
        "verdict": verdict,
        "detail_reject": "box_out_of_bounds" if failed else None,
        "detail_problems": ["box_out_of_bounds: outside"] if failed else [],
    }


def test_drop_balanced_keeps_an_unequal_share():
    # 6 Yes / 4 No (share 0.6); 3 Yes fail → 3 Yes left, so 2 No stay (share 0.6), 2 are partners
    anns = [_ann(i, "Yes", failed=i < 3) for i in range(6)] + [_ann(10 + i, "No") for i in range(4)]
    anns.append(_ann(20, "Discard"))
    sel = H.select_annotations(anns, H.DROP_BALANCED)
    kept = [a["verdict"] for a in sel.kept]
    assert kept.count("Yes") == 3 and kept.count("No") == 2 and "Discard" in kept
    reasons = [r["reason"] for r in sel.rejects]
    assert reasons.count(H.BALANCE_PARTNER_DROPPED) == 2 and reasons.count("box_out_of_bounds") == 3 * 6
    again = H.select_annotations(anns, H.DROP_BALANCED)
    assert [a["annotation_id"] for a in again.kept] == [a["annotation_id"] for a in sel.kept]  # deterministic


def test_keep_classification_keeps_every_verdict_and_a_failed_negative():
    anns = [_ann(0, "Yes", failed=True), _ann(1, "No", failed=True), _ann(2, "WIDLII")]
    sel = H.select_annotations(anns)
    assert len(sel.kept) == 3
    assert sorted({r["item_id"] for r in sel.rejects}) == sorted(H.item_id("hma_000", t) for t in H.DETAIL_TASKS)
    with pytest.raises(ValueError):
        H.select_annotations(anns, "guess")
