"""VAGUE as the official pipeline built it (§4.1.2): only physical-object tags count (a named list in
config/vision.yaml, every tagger backend), people are never objects, scenes are ranked by their
object count, and no option exceeds 15 words."""

import pandas as pd
import pytest

from assets.recipes.vague.logic import logic
from assets.recipes.vague.logic.objects import object_filter
from assets.recipes.vague.logic.stages import build_items
from forge.benchmarks.settings import recipe_settings
from forge.storage import RejectLog
from tests.recipes.vague.test_vague_logic import _frames


def test_physical_object_filter_from_config():
    f = object_filter("physical_objects")
    assert f.is_object("cup") and f.is_object("cups") and f.is_object("Wine Glass") and f.is_object("fire hydrant")
    for tag in ("person", "people", "man", "woman", "sky", "happy", "indoor", "sunlight", "party", ""):
        assert not f.is_object(tag), tag
    assert f.keep(["person", "table", "smile", "lamp", "street"]) == ["table", "lamp"]
    # the `none` option keeps every tag, but people are still never objects
    none = object_filter("none")
    assert none.keep(["person", "sky", "table"]) == ["sky", "table"]
    with pytest.raises(ValueError, match="object_filter"):
        object_filter("everything")
    with pytest.raises(ValueError, match="empty"):
        object_filter("physical_objects", {"physical_objects": {"objects": []}})


def _scenes(ids, n_persons):
    return pd.DataFrame(
        {
            "frame_id": ids,
            "batch": "b1",
            "source": "s",
            "n_tags": 0,
            "n_persons": n_persons,
            "rank": list(range(1, len(ids) + 1)),
            "selected": True,
            "reason": "selected",
        }
    )


@pytest.mark.parametrize("backend", ["ram", "yolo"])
def test_person_and_abstract_tags_never_count_and_scenes_rank_by_objects(backend):
    cfg = dict(recipe_settings("vague", "paper")["candidates"], max_per_batch=2)
    assert cfg["object_filter"] == "physical_objects"
    ids = ["persons_only", "abstract", "one_obj", "three_obj"]
    frames = _frames(
        [
            {"frame_id": f, "item_id": f"v{i}", "kind": "image", "timestamp_s": None, "path": f"{f}.jpg"}
            for i, f in enumerate(ids)
        ]
    )
    tag_rows = [
        ("persons_only", "person"),
        ("persons_only", "man"),
        ("abstract", "sky"),
        ("abstract", "happy"),
        ("abstract", "person"),
        ("one_obj", "person"),
        ("one_obj", "cup"),
        ("one_obj", "sky"),
        ("three_obj", "table"),
        ("three_obj", "lamp"),
        ("three_obj", "chairs"),
    ]
    tags = pd.DataFrame(
        {"frame_id": [f for f, _ in tag_rows], "tag": [t for _, t in tag_rows], "score": 0.9, "backend": backend}
    )
    # the tagger's own rank put the poorest scenes first: VAGUE re-ranks by physical objects
    df, rej = logic.select_candidates(frames, _scenes(ids, [2, 2, 2, 2]), pd.DataFrame(), tags, pd.DataFrame(), **cfg)
    assert df["frame_id"].tolist() == ["three_obj", "one_obj"]
    assert df.set_index("frame_id")["objects"].map(list).to_dict() == {
        "three_obj": ["table", "lamp", "chairs"],
        "one_obj": ["cup"],
    }
    assert df["n_tags"].tolist() == [3, 1]
    # "person" is still a present object for the NE check (never chosen as an absent substitute)
    assert "person" in list(df.set_index("frame_id").loc["one_obj", "present_objects"])
    reasons = {r["frame_id"]: r["reason"] for r in rej}
    assert reasons == {"persons_only": "too_few_tags", "abstract": "too_few_tags"}


def test_options_over_15_words_are_rejected():
    short = "The speaker wants person1 to move the sedan."
    long = "The speaker wants person1 to very carefully move the old red sedan away from the busy fire hydrant now."
    assert logic.long_options({"correct": short, "FS": short}, 15) == []
    assert logic.long_options({"correct": short, "NE": long}, 15) == ["NE (19 words)"]
    cand = pd.DataFrame([{"frame_id": "f1", "item_id": "v1", "source": "s", "batch": "b1", "image_path": "p.jpg"}])
    common = {"prompt_hash": "h", "backend": "openai", "model": "m", "advisory": None}
    direct = pd.DataFrame(
        [
            {
                "frame_id": "f1",
                "direct_expression": "d",
                "subject": "person1",
                "action": "move",
                "object": "sedan",
                "intention": short,
                **common,
            }
        ]
    )
    indirect = pd.DataFrame([{"frame_id": "f1", "strategy": "humour", "indirect_expression": "x", **common}])
    texts = {
        "correct": short,
        "FS": "The speaker wants person1 to sing.",
        "SU": "The speaker wants person1 to dance.",
        "NE": long,
    }
    options = pd.DataFrame(
        [{"frame_id": "f1", "option_type": t, "text": texts[t], **common} for t in logic.OPTION_TYPES]
    )
    cfg = recipe_settings("vague", "paper")["options"]
    assert cfg["max_words"] == 15
    log = RejectLog("vague_items", "b1")
    items = build_items("b1", cand, direct, indirect, options, cfg, "seed", {}, log)
    assert items.empty and [r["reason"] for r in log.rows] == ["option_too_long"]
    options.loc[options["option_type"] == "NE", "text"] = "The speaker wants person1 to move the truck."
    log = RejectLog("vague_items", "b1")
    assert len(build_items("b1", cand, direct, indirect, options, cfg, "seed", {}, log)) == 1 and not log.rows


def test_direct_expression_in_another_language_is_wrong_language_and_nothing_else():
    italian = {
        "direct_expression": "Ehi persona1, per favore sposta la macchina dal passo carrabile.",
        "subject": "nobody",
        "action": "",
        "object": "unicorn",
        "intention": "Chi parla vuole che persona1 sposti la macchina.",
    }
    assert [p[0] for p in logic.triple_problems(italian, ["person1"], ["car"])] == ["wrong_language"]
    english = dict(
        italian, direct_expression="Hey person1, please move the car.", intention="The speaker wants it moved."
    )
    assert "wrong_language" not in [p[0] for p in logic.triple_problems(english, ["person1"], ["car"])]


def test_indirect_expression_in_another_language_is_wrong_language_not_an_ambiguity_verdict():
    rep = logic.ambiguity_check("Che bella giornata per lasciare la macchina davanti all'idrante, vero?", "move", "car")
    assert not rep.ok and rep.reasons == ["wrong_language"]
    en = logic.ambiguity_check("What a lovely day to block the hydrant, isn't it?", "move", "car")
    assert "wrong_language" not in en.reasons
