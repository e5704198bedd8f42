"""Hummus as the paper built it: a verdict changed while revising the detail annotation is a reject
of its own (``verdict_changed``) unless it is WIDLII → No / Discard (§4.2); the 30-word limit of
§6 / Table 1 is asked of evaluated models, never applied to the gold explanations (§4.2)."""

from assets.recipes.hummus.logic import annotations as A
from tests.llm_double.server import message_text
from tests.recipes.hummus.test_hummus_assets import BATCH, _ann, _run, image_store

CAPTIONS = {
    "p1": "Our sex life is a train wreck.",
    "p2": "He thinks the pub is a coal mine.",
    "p3": "Lunch is on me.",
    "p4": "The shark says hello.",
}
LONG = " ".join(["word"] * 40) + "."


def responder(body):
    name = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    text = message_text(body)
    revised = "A reviewer asked" in text
    if name != "hummus_annotate":
        return None
    if "train wreck" in text:  # Yes with a box outside the image; the revision dodges it by saying No
        if revised:
            return _ann("No")
        return _ann(
            "Yes",
            metaphors=["LOVE IS A JOURNEY"],
            regions=[{"label": "car", "box": [0.9, 0.9, 0.5, 0.5]}],
            caption_highlighted="Our sex life is a <i>train wreck</i>.",
            explanation="The crash literalises the wreck.",
        )
    if "shark says" in text:  # annotated in Italian every time: wrong_language, before any other check
        return _ann(
            "No",
            incongruities=["uno squalo che parla in un ufficio pieno di persone"],
            resolution="la didascalia spiega perché lo squalo saluta tutti quanti",
        )
    if "coal mine" in text:  # WIDLII re-labelled No while revising: allowed (§4.2)
        if revised:
            return _ann("No")
        return _ann("WIDLII", metaphors=["PUB IS A COAL MINE"], regions=[], caption_highlighted="x", explanation="y")
    return _ann(  # a 40-word gold explanation: the paper's annotator had no word limit
        "Yes",
        metaphors=["PAYING IS CARRYING"],
        regions=[{"label": "tray", "box": [0.1, 0.1, 0.5, 0.5]}],
        caption_highlighted="Lunch is <i>on me</i>.",
        explanation=LONG,
    )


def test_verdict_change_rule():
    assert A.verdict_change("Yes", "No") and A.verdict_change("No", "Yes") and A.verdict_change("Yes", "Discard")
    assert A.verdict_change("WIDLII", "No") is None and A.verdict_change("WIDLII", "Discard") is None
    assert A.verdict_change("maybe", "No") is None  # the first verdict was unreadable: the feedback asked
    assert A.verdict_change("Yes", "yes") is None


def test_verdict_flip_rejected_widlii_relabel_kept_gold_uncapped_wrong_language(
    tmp_path, llm_double, llm_double_resource
):
    store = image_store(tmp_path, CAPTIONS, BATCH)
    llm_double.responder = responder
    res = _run(store, llm_double_resource(), max_rounds=2)
    assert res.success
    rej = store.read("rejects")
    rej = rej[rej["stage"] == "hummus_annotations"].set_index("item_id")
    assert rej.loc["img_p1", "reason"] == "verdict_changed" and "from Yes to No" in rej.loc["img_p1", "detail"]
    ann = store.read("hummus_annotations").set_index("frame_id")
    assert "img_p1" not in ann.index  # its No is not the pair's verdict
    assert ann.loc["img_p2", "verdict"] == "No"  # WIDLII → No while revising: the paper allows it
    p3 = ann.loc["img_p3"]
    assert p3["verdict"] == "Yes" and p3["explanation_words"] == 40 and p3["explanation"] == LONG.strip()
    assert "explanation_too_long" not in set(store.read("rejects")["reason"])
    assert rej.loc["img_p4", "reason"] == "wrong_language" and "img_p4" not in ann.index


def test_simile_and_personification_are_metaphors_not_other_devices():
    """§2: simile, personification and zoomorphism are metaphor use under CMT; named as devices
    they are left out of ``devices`` (with a note), never counted as another figurative device."""
    from assets.recipes.hummus.logic.taxonomy import devices

    assert not {"simile", "anthropomorphism", "personification", "zoomorphism"} & set(devices())
    reply = {
        "verdict": "Yes",
        "incongruities": ["a car in the bedroom"],
        "resolution": "the caption compares sex life to a wreck",
        "metaphors": ["LOVE IS A JOURNEY"],
        "regions": [{"label": "car", "box": [0.3, 0.0, 0.5, 0.4]}],
        "caption_highlighted": "Our sex life is a <i>train wreck</i>.",
        "explanation": "The crash literalises the wreck.",
        "devices": ["Simile", "anthropomorphism", "pun"],
        "discard_reason": "",
    }
    ann, p = A.validate_annotation(reply, "Our sex life is a train wreck.", 800, 600)
    assert not p and ann.devices == ["pun"]
    assert sum("metaphor use (§2)" in r for r in p.repairs) == 2
