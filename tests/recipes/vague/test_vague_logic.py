"""VAGUE recipe logic on hand-made cases."""

import json

import pandas as pd

from assets.recipes.vague.logic import lexicon, logic


def test_lemma_rules_match_inflections():
    assert {lexicon.lemma(w) for w in ("close", "closing", "closed", "closes")} == {"clos"}
    assert lexicon.lemma("running") == lexicon.lemma("run") == "run"
    assert lexicon.lemma("cups") == "cup" and lexicon.lemma("glasses") == lexicon.lemma("glass")
    assert lexicon.lemma("knives") == lexicon.lemma("knife")
    assert lexicon.lemma("babies") == "baby" and lexicon.lemma("bus") == "bus"
    assert lexicon.content_lemmas("Hey person1, pick UP the cups") == ["pick", "cup"]
    assert lexicon.mentions("Stop closing every window!", "close the windows") == ["clos", "window"]
    assert lexicon.mentions("Nice weather for a swim", "pick up the cup") == []


def test_triple_problems():
    ok = {
        "direct_expression": "Hey person1, hand me the cup.",
        "subject": "person1",
        "action": "hand",
        "object": "Cups",
        "intention": "The speaker wants person1 to hand over the cup.",
    }
    assert logic.triple_problems(ok, ["person1", "person2"], ["cup", "table"]) == []
    assert logic.match_object("Cups", ["cup", "table"]) == "cup"
    bad = dict(ok, subject="person7", object="umbrella", action="the")
    reasons = [r for r, _ in logic.triple_problems(bad, ["person1"], ["cup"])]
    assert reasons == ["subject_not_a_person_label", "object_not_in_tags", "empty_action"]
    # No person indicators on the frame: the addressee is the unlabelled 'someone'.
    assert logic.triple_problems(dict(ok, subject="someone"), [], ["cup"]) == []


def test_specialise_restricts_schema_and_keeps_base_hash_prefix():
    from assets.recipes.vague.logic.stages import PROMPT_FILES
    from forge.llm.prompts import load_prompt

    p = load_prompt(PROMPT_FILES["direct"])
    s = logic.specialise(p, {"subject": ["person1"], "object": ["cup", "table"]})
    assert s.schema["properties"]["object"]["enum"] == ["cup", "table"]
    assert "enum" not in p.schema["properties"]["object"]  # the file's prompt is untouched
    assert s.hash.startswith(p.hash + ".") and s.hash != p.hash
    assert s.name == p.name


def test_reply_json_reads_fenced_or_bare():
    assert logic.reply_json('```json\n{"a": 1}\n```') == {"a": 1}
    assert logic.reply_json("nope") is None and logic.reply_json(None) is None


def test_ambiguity_lexical_only():
    rep = logic.ambiguity_check("Hey person1, those cups won't wash themselves", "wash", "cup")
    assert not rep.ok and set(rep.reasons) == {"names_action", "names_object"}
    rep = logic.ambiguity_check("Hey person1, I love a sink full of surprises", "wash", "cup")
    assert rep.ok and rep.reasons == []


def test_ambiguity_embedding_catches_synonyms(embedder):
    rep = logic.ambiguity_check(
        "Hey person1, that mug has been lonely all day", "pick up", "cup", embedder=embedder, word_threshold=0.7
    )
    assert "object_synonym" in rep.reasons and rep.object_similar_word == "mug" and rep.object_similarity >= 0.7
    fine = logic.ambiguity_check(
        "Hey person1, I guess the sink is a museum now",
        "pick up",
        "cup",
        direct="Hey person1, please pick up the cup.",
        embedder=embedder,
    )
    assert fine.ok, fine
    close = logic.ambiguity_check(
        "Hey person1, please pick up the cup now.",
        "grab",
        "glass",
        direct="Hey person1, please pick up the cup.",
        embedder=embedder,
    )
    assert "too_close_to_direct" in close.reasons


def test_ne_problems(embedder):
    present = ["cup", "dining table", "person"]
    assert logic.ne_problems("teapot", "The speaker wants person1 to pick up the teapot.", "cup", present) == []
    r = [x for x, _ in logic.ne_problems("table", "The speaker wants person1 to clean the table.", "cup", present)]
    assert r == ["ne_object_present"]
    r = [x for x, _ in logic.ne_problems("cups", "The speaker wants person1 to pick up the cup.", "cup", present)]
    assert "ne_same_object" in r and "ne_mentions_original" in r
    # A near-synonym of a present object counts as present (embedding check).
    r = [
        x
        for x, _ in logic.ne_problems(
            "mug", "The speaker wants person1 to pick up the mug.", "plate", ["cup"], embedder, 0.7
        )
    ]
    assert r == ["ne_object_present"]


def _frames(rows):
    base = {
        "batch": "b1",
        "source": "s",
        "clip_id": None,
        "frame_index": 0,
        "width": 10,
        "height": 10,
        "blur_var": 100.0,
        "caption": None,
        "sha256": "x",
    }
    return pd.DataFrame([{**base, **r} for r in rows])


def test_select_candidates_filters_and_falls_back():
    frames = _frames(
        [
            {"frame_id": "f1", "item_id": "v1", "kind": "pool_frame", "timestamp_s": 1.0, "path": "f1.jpg"},
            {
                "frame_id": "f2",
                "item_id": "v1",
                "kind": "pool_frame",
                "timestamp_s": 1.5,
                "path": "f2.jpg",
            },  # neighbour
            {"frame_id": "f3", "item_id": "v2", "kind": "clip_frame", "timestamp_s": 9.0, "path": "f3.jpg"},  # kind
            {
                "frame_id": "f4",
                "item_id": "v3",
                "kind": "pool_frame",
                "timestamp_s": 2.0,
                "path": "f4.jpg",
                "blur_var": 3.0,
            },  # blurry
            {
                "frame_id": "f5",
                "item_id": "i5",
                "kind": "image",
                "timestamp_s": None,
                "path": "f5.jpg",
                "caption": "A cat sleeps on the sofa",
            },  # caption vocab
            {"frame_id": "f6", "item_id": "v1", "kind": "pool_frame", "timestamp_s": 8.0, "path": "f6.jpg"},  # no tags
        ]
    )
    scenes = pd.DataFrame(
        {
            "frame_id": ["f1", "f2", "f3", "f4", "f5", "f6"],
            "batch": "b1",
            "source": "s",
            "n_tags": [2, 2, 1, 1, 0, 0],
            "n_persons": [2, 2, 0, 0, 0, 0],
            "rank": [1, 2, 3, 4, 5, 6],
            "selected": True,
            "reason": "selected",
        }
    )
    ind = pd.DataFrame(
        {
            "frame_id": ["f1", "f1"],
            "label": ["person2", "person1"],
            "person_index": [2, 1],
            "annotated_path": ["ann/f1.jpg", "ann/f1.jpg"],
        }
    )
    tags = pd.DataFrame(
        {
            "frame_id": ["f1", "f1", "f2", "f3", "f4"],
            "tag": ["Cup", "table", "cup", "x", "y"],
            "score": [0.9, 0.8, 0.5, 0.5, 0.5],
        }
    )
    dets = pd.DataFrame({"frame_id": ["f1"], "class_name": ["person"]})
    df, rej = logic.select_candidates(
        frames,
        scenes,
        ind,
        tags,
        dets,
        min_persons=0,
        min_tags=0,
        min_blur_var=10,
        min_gap_s=2.0,
        object_vocabulary="tags_or_caption",
    )
    assert df["frame_id"].tolist() == ["f1", "f5"]
    f1 = df.iloc[0]
    assert f1["person_labels"] == ["person1", "person2"] and f1["image_path"] == "ann/f1.jpg"
    assert f1["image_kind"] == "indicators" and f1["objects"] == ["cup", "table"]
    assert f1["present_objects"] == ["cup", "person", "table"]
    f5 = df.iloc[1]
    assert f5["image_kind"] == "plain" and f5["image_path"] == "f5.jpg" and "no person indicator" in f5["image_note"]
    assert f5["object_source"] == "caption" and f5["objects"] == ["cat", "sleeps", "sofa"]
    assert {r["frame_id"]: r["reason"] for r in rej} == {
        "f2": "neighbouring_frame",
        "f3": "frame_kind",
        "f4": "blurry",
        "f6": "no_object_vocabulary",
    }
    # The paper's stricter settings: ≥ 2 persons, objects from tags only.
    df2, rej2 = logic.select_candidates(
        frames, scenes, ind, tags, dets, min_persons=2, min_tags=1, object_vocabulary="tags", max_per_batch=1
    )
    assert df2["frame_id"].tolist() == ["f1"]
    assert {r["frame_id"]: r["reason"] for r in rej2}["f5"] == "too_few_persons"


def test_build_item_has_common_columns_and_types():
    cand = {"frame_id": "f1", "item_id": "v1", "source": "s", "batch": "b1", "image_path": "ann/f1.jpg"}
    direct = {
        "direct_expression": "d",
        "subject": "person1",
        "action": "hand",
        "object": "cup",
        "intention": "The speaker wants person1 to hand over the cup.",
        "prompt_hash": "h1",
        "judge_prompt_hash": "h2",
        "backend": "openai",
        "model": "m",
    }
    indirect = {
        "strategy": "humour",
        "indirect_expression": "I'm parched",
        "prompt_hash": "h3",
        "select_prompt_hash": "h4",
        "backend": "openai",
    }
    options = {
        "correct": {"text": direct["intention"]},
        "FS": {"text": "fs", "prompt_hash": "h5"},
        "SU": {"text": "su"},
        "NE": {"text": "ne", "substitute_object": "jug"},
    }
    item = logic.build_item(cand, direct, indirect, options, correct_position=3, seed="s")
    assert item["answer"] == "D" and item["option_types"][3] == "correct" and item["options"][3] == direct["intention"]
    assert sorted(item["option_types"]) == ["FS", "NE", "SU", "correct"]
    assert item["benchmark"] == "vague" and item["task"] == "mcq" and item["category"] == "humour"
    assert item["media_paths"] == ["ann/f1.jpg"] and item["unit_id"] == "f1" and item["source_item_id"] == "v1"
    assert "I'm parched" in item["question"] and item["backend"] == "openai"
    assert json.loads(item["extra"])["substitute_object"] == "jug"
    assert item == logic.build_item(cand, direct, indirect, options, correct_position=3, seed="s")


def test_mcq_figures_from_items_frame():
    from assets.recipes.mcq_checks import mcq_figures

    df = pd.DataFrame(
        {
            "item_id": ["a", "b", "c"],
            "options": [["long correct answer", "x", "y", "z"], ["p", "q", "same", "Same."], ["a", "b"]],
            "answer": ["A", "C", "A,B"],
        }
    )
    fig = mcq_figures(df)
    assert fig["items"] == 2  # the multi-answer row is not a single-answer MCQ
    assert fig["position"].counts == {"A": 1, "B": 0, "C": 1, "D": 0}
    assert fig["length"].correct_longest == 1
    assert fig["duplicates"].items_with_duplicates == 1 and fig["duplicates"].examples[0]["item_id"] == "b"


def test_paper_defaults_reject_a_one_person_scene_and_record_the_tagger(monkeypatch):
    """With no profile named, candidate selection uses the paper's criteria (§4.1: ≥ 2 persons,
    objects from the tagger only); a kept frame says which tagger its objects came from."""
    from forge.benchmarks.settings import recipe_settings

    monkeypatch.delenv("SUBTEXT_RECIPE_PROFILE", raising=False)
    monkeypatch.delenv("SUBTEXT_VAGUE_CONFIG", raising=False)
    cfg = recipe_settings("vague")["candidates"]
    frames = _frames(
        [
            {"frame_id": "two", "item_id": "v1", "kind": "pool_frame", "timestamp_s": 1.0, "path": "two.jpg"},
            {"frame_id": "one", "item_id": "v2", "kind": "pool_frame", "timestamp_s": 1.0, "path": "one.jpg"},
            {
                "frame_id": "cap",
                "item_id": "i3",
                "kind": "image",
                "timestamp_s": None,
                "path": "cap.jpg",
                "caption": "Two men argue over a teapot",
            },
        ]
    )
    scenes = pd.DataFrame(
        {
            "frame_id": ["two", "one", "cap"],
            "batch": "b1",
            "source": "s",
            "n_tags": [2, 2, 0],
            "n_persons": [2, 1, 2],
            "rank": [1, 2, 3],
            "selected": True,
            "reason": "selected",
        }
    )
    tags = pd.DataFrame(
        {
            "frame_id": ["two", "two", "one"],
            "tag": ["cup", "table", "lamp"],
            "score": [0.9, 0.8, 0.7],
            "backend": ["yolo", "yolo", "yolo"],
        }
    )
    df, rej = logic.select_candidates(frames, scenes, pd.DataFrame(), tags, pd.DataFrame(), **cfg)
    assert df["frame_id"].tolist() == ["two"]
    assert df.iloc[0]["object_source"] == "tags" and df.iloc[0]["tagger_backend"] == "yolo"
    reasons = {r["frame_id"]: (r["reason"], r["detail"]) for r in rej}
    assert reasons["one"] == ("too_few_persons", "1 < 2")
    assert reasons["cap"][0] == "too_few_tags"  # a caption is no object source under the paper's settings
    # the demo profile relaxes exactly these criteria: the 1-person scene and the caption image pass
    demo = recipe_settings("vague", "demo")["candidates"]
    df_demo, _ = logic.select_candidates(frames, scenes, pd.DataFrame(), tags, pd.DataFrame(), **demo)
    assert df_demo["frame_id"].tolist() == ["two", "one", "cap"]
    assert df_demo.set_index("frame_id")["object_source"].to_dict() == {"two": "tags", "one": "tags", "cap": "caption"}


def test_item_labels_name_the_tagger_backend():
    cand = {"frame_id": "f1", "item_id": "v1", "source": "s", "batch": "b1", "image_path": "p.jpg"}
    common = {"prompt_hash": "h", "backend": "openai", "model": "m"}
    direct = {"direct_expression": "d", "subject": "person1", "action": "a", "object": "cup", "intention": "i"}
    indirect = {"strategy": "humour", "indirect_expression": "x"}
    options = {t: {"text": f"opt {t}", **common} for t in logic.OPTION_TYPES}
    for backend, label in (("ram", "ram"), ("yolo", "yolo_classes_fallback"), (None, None)):
        row = logic.build_item(
            {**cand, "object_source": "tags", "tagger_backend": backend},
            {**direct, **common},
            {**indirect, **common},
            options,
            0,
            "seed",
        )
        assert json.loads(row["labels"])["tagger_backend"] == label
