"""Hummus assets end to end through the LLM test double, every branch scripted: table and
LLM captions, no caption, Yes after a box-out-of-bounds regeneration, WIDLII with a span that
is never a substring (rejected), No, bad metaphor then too-long explanation (rejected after
K rounds), Discard; regions in pixel and normalised coordinates; the six task items."""

import base64
import io
import json

import dagster as dg
import pandas as pd
import pytest
from PIL import Image

from forge.storage import TableStore
from forge.storage.contracts import load_contract
from resources.storage import StorageResource
from tests.llm_double.server import Reply, message_text

BATCH = "capcon-0000"
CAPTIONS = {
    "p1": "Our sex life is a train wreck.",
    "p2": "He thinks the pub is a coal mine.",
    "p3": "Nice weather today.",
    "p4": "Lunch is on me.",
    "p5": None,
}


def image_store(tmp_path, captions: dict, batch: str) -> TableStore:
    """A store whose ``frames`` hold one 200x100 image per caption (None = no caption)."""
    s = TableStore(tmp_path / "data")
    (s.data_dir / "media/images").mkdir(parents=True, exist_ok=True)
    rows = []
    for k, (name, cap) in enumerate(captions.items()):
        rel = f"media/images/{name}.png"
        Image.new("RGB", (200, 100), ((50 * k) % 256, 80, 120)).save(s.data_dir / rel)
        rows.append(
            {
                "frame_id": f"img_{name}",
                "batch": batch,
                "source": "capcon",
                "item_id": f"it_{name}",
                "clip_id": None,
                "kind": "image",
                "frame_index": 0,
                "timestamp_s": None,
                "path": rel,
                "width": 200,
                "height": 100,
                "blur_var": 5.0,
                "caption": cap,
                "sha256": name * 8,
            }
        )
    c = load_contract("frames")
    s.write("frames", c.conform(pd.DataFrame(rows)), batch, schema=c.arrow_schema())
    return s


@pytest.fixture
def store(tmp_path):
    return image_store(tmp_path, CAPTIONS, BATCH)


def _ann(verdict="Yes", **kw):
    base = {
        "incongruities": ["something odd"],
        "resolution": "the caption explains it",
        "verdict": verdict,
        "metaphors": [],
        "regions": [],
        "caption_highlighted": "",
        "explanation": "",
        "devices": [],
        "discard_reason": "",
    }
    return base | kw


def responder(body):
    name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    text = message_text(body)
    rounds = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if name == "hummus_caption":
        return {"caption": "  A caption   made up. "}
    if name != "hummus_annotate":
        return None
    if "train wreck" in text:
        box = [0.8, 0.1, 0.5, 0.3] if rounds == 0 else [0.2, 0.1, 0.5, 0.3]  # first box leaves the image
        return _ann(
            "Yes",
            metaphors=["love is a journey"],
            regions=[{"label": "car", "box": box}],
            caption_highlighted="Our sex life is a <i>train wreck</i>.",
            devices=["hyperbole"],
            explanation="The crashed car literalises the train wreck of their love life.",
        )
    if "coal mine" in text:
        return _ann(
            "WIDLII",
            metaphors=["PUB IS A COAL MINE"],
            regions=[{"label": "suit", "box": [0.1, 0.1, 0.2, 0.2]}],
            caption_highlighted="He thinks the <i>bar</i> is a coal mine.",
            explanation="Short enough.",
        )
    if "Nice weather" in text:
        return _ann("No", devices=["irony"])
    if "Lunch is on me" in text:
        return _ann(
            "Yes",
            metaphors=["lunch on me"] if rounds == 0 else ["PAYING IS CARRYING"],
            regions=[{"label": "tray", "box": [0.0, 0.0, 1.0, 1.0]}],
            caption_highlighted="Lunch is <i>on me</i>.",
            explanation=" ".join(["word"] * 40),
        )
    if "made up" in text:
        return _ann("Discard", discard_reason="the hat stays unexplained")
    return None


def _run(store, llm, generate=True, max_rounds=1, select=None, explanation_max_words=None):
    from assets.recipes.hummus import assets as A

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    assets = select or [A.hummus_pairs, A.hummus_annotations, A.hummus_items]
    ops = {"hummus_pairs": {"config": {"generate_captions": generate}}}
    if len(assets) > 1:
        ops["hummus_annotations"] = {
            "config": {"max_rounds": max_rounds, "explanation_max_words": explanation_max_words}
        }
    return dg.materialize(
        assets,
        partition_key=BATCH,
        instance=instance,
        run_config={"ops": ops},
        resources={"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm},
    )


def test_hummus_end_to_end_every_branch(store, llm_double, llm_double_resource):
    llm_double.responder = responder
    # the named option that caps generated gold explanations (the paper: none; §6 asks models for 30)
    res = _run(store, llm_double_resource(), explanation_max_words=30)
    assert res.success
    assert all(e.passed for e in res.get_asset_check_evaluations() if e.check_name.startswith("contract_"))

    pairs = store.read("hummus_pairs").set_index("frame_id")
    assert pairs.loc["img_p1", "caption_origin"] == "source" and pd.isna(pairs.loc["img_p1", "prompt_hash"])
    assert pairs.loc["img_p5", "caption_origin"] == "llm" and pairs.loc["img_p5", "caption"] == "A caption made up."
    assert pairs.loc["img_p5", "prompt_hash"]

    ann = store.read("hummus_annotations").set_index("frame_id")
    assert sorted(ann.index) == ["img_p1", "img_p2", "img_p3", "img_p4", "img_p5"]
    p1 = ann.loc["img_p1"]
    assert p1["verdict"] == "Yes" and p1["rounds"] == 1 and list(p1["metaphors"]) == ["LOVE IS A JOURNEY"]
    assert pd.isna(p1["detail_reject"])
    assert (
        list(p1["span_texts"]) == ["train wreck"]
        and p1["caption"][p1["span_starts"][0] : p1["span_ends"][0]] == "train wreck"
    )
    assert any("LOVE IS A JOURNEY" in r for r in p1["repairs"])
    assert ann.loc["img_p3", "verdict"] == "No" and list(ann.loc["img_p3", "devices"]) == ["irony"]
    assert ann.loc["img_p5", "verdict"] == "Discard" and ann.loc["img_p5", "caption_origin"] == "llm"
    # detail failed after K rounds, verdict readable: kept verdict-only for Classification
    p2, p4 = ann.loc["img_p2"], ann.loc["img_p4"]
    assert p2["verdict"] == "WIDLII" and p2["detail_reject"] == "invalid_span" and not len(p2["metaphors"])
    assert any("not an exact substring" in x for x in p2["detail_problems"]) and p2["n_regions"] == 0
    assert p4["verdict"] == "Yes" and p4["detail_reject"] == "explanation_too_long" and p4["prompt_hash"]

    reg = store.read("hummus_regions")
    assert len(reg) == 1
    r = reg.iloc[0]
    assert (r.box_px_x0, r.box_px_y0, r.box_px_x1, r.box_px_y1) == (20, 20, 80, 70)
    assert (r.box_norm_top, r.box_norm_left, r.box_norm_height, r.box_norm_width) == (0.2, 0.1, 0.5, 0.3)

    rej = store.read("rejects")
    assert not len(rej[rej["stage"] == "hummus_annotations"])
    rej = rej[rej["stage"] == "hummus_items"]
    assert sorted(rej["reason"]) == ["explanation_too_long"] * 5 + ["invalid_span"] * 5
    assert rej[rej["reason"] == "invalid_span"]["detail"].str.contains("not an exact substring").all()
    att = store.read("llm_attempts")
    fb = att[(att["item_id"] == "img_p1") & att["step"].str.startswith("check")]["feedback"].dropna().tolist()
    assert any("outside the image" in f for f in fb)
    p4 = att[(att["item_id"] == "img_p4") & att["step"].str.startswith("check")]["feedback"].dropna().tolist()
    assert "exactly one IS/ARE" in p4[0] and "40 words" in p4[1]

    items = store.read("hummus_items")
    by = {(r.unit_id, r.task): r for r in items.itertuples()}
    assert sorted(t for u, t in by if u == "img_p1") == sorted(
        ["classification", "naming", "image_box", "image_label", "caption_highlight", "explanation"]
    )
    assert [t for u, t in by if u == "img_p3"] == ["classification"] and not [t for u, t in by if u == "img_p5"]
    for u in ("img_p2", "img_p4"):  # verdict-only pairs: the classification item only, positive
        assert [t for v, t in by if v == u] == ["classification"] and by[(u, "classification")].answer == "A"
    assert by[("img_p1", "classification")].answer == "A" and by[("img_p3", "classification")].answer == "B"
    assert by[("img_p1", "image_box")].answer == "car: [0.200, 0.100, 0.500, 0.300]"
    assert by[("img_p1", "naming")].answer == "LOVE IS A JOURNEY"
    assert by[("img_p1", "caption_highlight")].answer == "Our sex life is a <i>train wreck</i>."
    assert json.loads(by[("img_p1", "image_label")].labels)["boxes"][0]["box_px_xyxy"] == [20, 20, 80, 70]
    assert all(r.backend == "openai" and r.prompt_hash for r in items.itertuples())
    sheet = res.asset_materializations_for_node("hummus_items")[0].metadata["contact_sheet"].value
    png = base64.b64decode(sheet.split("base64,", 1)[1].rstrip(")"))  # the items as a picture in the UI
    assert sheet.startswith(f"![hummus_items {BATCH}](data:image/png;") and Image.open(io.BytesIO(png)).width > 200

    md = res.asset_materializations_for_node("hummus_annotations")[0].metadata
    assert md["invalid_span_rate"].value == pytest.approx(1 / 5) and md["verdict_Yes"].value == 2
    assert md["verdict_only"].value == 2

    from assets.recipes.hummus.checks import annotation_failure_rates

    chk = annotation_failure_rates(StorageResource(data_dir=str(store.data_dir)))
    assert chk.metadata["pairs"].value == 5 and chk.metadata["rates"].value["explanation_too_long"] == 0.2
    assert chk.metadata["verdict_only"].value == 2


def test_no_caption_rejected_without_generation(store, llm_double, llm_double_resource):
    from assets.recipes.hummus import assets as A

    llm_double.responder = responder
    assert _run(store, llm_double_resource(), generate=False, select=[A.hummus_pairs]).success
    assert sorted(store.read("hummus_pairs")["frame_id"]) == ["img_p1", "img_p2", "img_p3", "img_p4"]
    rej = store.read("rejects")
    assert rej[rej["stage"] == "hummus_pairs"][["item_id", "reason"]].values.tolist() == [["img_p5", "no_caption"]]
    assert not [r for r in llm_double.requests if "hummus_caption" in json.dumps(r["body"].get("response_format"))]


def test_caption_prompt_check_counts_only_llm_captions(store, llm_double, llm_double_resource):
    from assets.recipes.hummus import assets as A
    from assets.recipes.hummus.checks import caption_prompt_current

    llm_double.responder = responder
    assert _run(store, llm_double_resource(), select=[A.hummus_pairs]).success
    st = StorageResource(data_dir=str(store.data_dir))
    ok = caption_prompt_current(st)
    assert ok.passed and ok.metadata["rows"].value == 1  # only the LLM-written caption counts
    df = store.read("hummus_pairs")
    df.loc[df["caption_origin"] == "llm", "prompt_hash"] = "old"
    store.write("hummus_pairs", df, BATCH)
    assert caption_prompt_current(st).metadata["outdated_rows"].value == 1


def _red(body) -> int:
    """Red channel of the first image attached to a chat request (the test images differ by colour)."""
    parts = [p for m in body["messages"] if isinstance(m["content"], list) for p in m["content"]]
    url = next(p["image_url"]["url"] for p in parts if p.get("type") == "image_url")
    return Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))).convert("RGB").getpixel((0, 0))[0]


def test_partitions_of_a_stage_run_at_once_with_their_own_rejects(tmp_path, llm_double, llm_double_resource):
    """A backfill over two batches: batch a's caption request is held by the endpoint, batch b's
    goes out meanwhile (run one after another, b would wait for a); rejects and metadata stay
    per batch; a re-run sends nothing."""
    from assets.recipes.hummus import assets as A

    image_store(tmp_path, {"slow": None}, "a-0000")  # red 0
    store = image_store(tmp_path, {"src": "A caption from the table.", "fast": None}, "b-0000")  # fast: red 50
    slow = Reply.json({"caption": "A slow but fine caption."}, delay=3.0)
    # b's uncaptioned image gets a blank caption: rejected (caption_failed) in batch b only
    llm_double.responder = lambda body: slow if _red(body) < 25 else {"caption": "  "}
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", ["a-0000", "b-0000"])

    def run():
        return dg.materialize(
            [A.hummus_pairs],
            instance=instance,
            run_config={"ops": {"hummus_pairs": {"config": {"generate_captions": True}}}},
            resources={"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm_double_resource()},
            tags={"dagster/asset_partition_range_start": "a-0000", "dagster/asset_partition_range_end": "b-0000"},
        )

    assert run().success
    assert len(llm_double.chat_requests) == 2
    t = sorted(q["t"] for q in llm_double.requests if q["path"].endswith("/chat/completions"))
    # b's request went out before a's held reply came back (whichever reached the double first)
    assert t[1] - t[0] < 3.0, f"the second batch's request waited {t[1] - t[0]:.2f} s for the first's reply"
    pairs = store.read("hummus_pairs").set_index("frame_id")
    assert sorted(pairs.index) == ["img_slow", "img_src"]
    assert pairs.loc["img_slow", "caption"] == "A slow but fine caption." and pairs.loc["img_slow", "batch"] == "a-0000"
    rej = store.read("rejects")
    rej = rej[rej["stage"] == "hummus_pairs"]
    assert rej[["partition", "item_id", "reason"]].values.tolist() == [["b-0000", "img_fast", "caption_failed"]]
    records = instance.fetch_materializations(dg.AssetKey("hummus_pairs"), limit=10).records
    md = {r.asset_materialization.partition: r.asset_materialization.metadata for r in records}
    assert {k: (m["dagster/row_count"].value, m["rejects"].value, m["llm_calls"].value) for k, m in md.items()} == {
        "a-0000": (1, 0, 1),
        "b-0000": (1, 1, 1),
    }
    assert md["a-0000"]["run_llm_captions"].value == 1

    before = len(llm_double.chat_requests)
    assert run().success
    assert len(llm_double.chat_requests) == before  # every reply came from the cache
