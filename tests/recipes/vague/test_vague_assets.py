"""VAGUE assets end to end through the LLM test double (OpenAI protocol on 127.0.0.1).

Six frames, one per branch, each recognised in the requests by its unique key object:
kettle passes; lamp gets a low direct rating; guitar's reply names an object not in the
tags (even after the engine's repair turn); laptop's indirect candidates all name the
object; bicycle's first NE object is present (regenerated, then accepted); umbrella's NE
object stays present (rejected after K rounds).
"""

import dagster as dg
import pandas as pd
import pytest
from PIL import Image

from forge.storage import TableStore
from forge.storage.contracts import load_contract
from tests.llm_double.server import Reply, message_text

BATCH = "b1"
FRAMES = {  # frame → (tags, person labels)
    "kettle": (["kettle", "stove"], ["person1", "person2"]),
    "lamp": (["lamp", "sofa"], ["person1"]),
    "guitar": (["guitar", "amplifier"], ["person1"]),
    "laptop": (["laptop", "desk"], ["person1"]),
    "bicycle": (["bicycle", "helmet"], []),  # no person indicator → plain frame, subject 'someone'
    "umbrella": (["umbrella", "raincoat"], ["person1"]),
}


def _write(store: TableStore, table: str, rows: list[dict]) -> None:
    c = load_contract(table)
    df = pd.DataFrame(rows) if rows else pd.DataFrame(columns=c.column_names)
    store.write(table, c.conform(df), BATCH, schema=c.arrow_schema())


@pytest.fixture
def data(tmp_path):
    store = TableStore(tmp_path / "data")
    (store.data_dir / "media").mkdir(parents=True)
    frames, scenes, inds, tags = [], [], [], []
    for i, (name, (ftags, labels)) in enumerate(FRAMES.items()):
        fid = f"fr_{name}"
        Image.new("RGB", (32, 24), (i * 30, 80, 120)).save(store.data_dir / "media" / f"{fid}.jpg")
        frames.append(
            {
                "frame_id": fid,
                "batch": BATCH,
                "source": "s",
                "item_id": f"vid_{name}",
                "clip_id": None,
                "kind": "pool_frame",
                "frame_index": 0,
                "timestamp_s": 3.0,
                "path": f"media/{fid}.jpg",
                "width": 32,
                "height": 24,
                "blur_var": 500.0,
                "sha256": fid,
            }
        )
        scenes.append(
            {
                "frame_id": fid,
                "batch": BATCH,
                "source": "s",
                "n_tags": len(ftags),
                "n_persons": len(labels),
                "rank": i + 1,
                "selected": True,
                "reason": "selected",
            }
        )
        if labels:
            Image.new("RGB", (32, 24)).save(store.data_dir / "media" / f"{fid}_ann.jpg")
        for k, lab in enumerate(labels):
            inds.append(
                {
                    "frame_id": fid,
                    "batch": BATCH,
                    "label": lab,
                    "person_index": k + 1,
                    "x1": 0.0,
                    "y1": 0.0,
                    "x2": 5.0,
                    "y2": 5.0,
                    "nx1": 0.0,
                    "ny1": 0.0,
                    "nx2": 0.1,
                    "ny2": 0.1,
                    "confidence": 0.9,
                    "font_size": 12,
                    "annotated_path": f"media/{fid}_ann.jpg",
                    "annotated_width": 32,
                    "annotated_height": 24,
                }
            )
        for t in ftags:
            tags.append(
                {
                    "frame_id": fid,
                    "batch": BATCH,
                    "tag": t,
                    "score": 0.8,
                    "count": 1,
                    "backend": "yolo",
                    "model_version": "test",
                }
            )
    _write(store, "frames", frames)
    _write(store, "rich_scenes", scenes)
    _write(store, "person_indicators", inds)
    _write(store, "tags", tags)
    _write(store, "detections", [])
    return store


def _which(text: str) -> str:
    return next(n for n in FRAMES if n in text)


def responder(body: dict) -> Reply:
    name = body["response_format"]["json_schema"]["name"]
    text = message_text(body)
    f = _which(text.split("Person labels in the image:")[-1] if name == "vague_direct" else text)
    subj = "someone" if f == "bicycle" else "person1"
    intention = f"The speaker wants {subj} to put away the {f}."
    if name == "vague_direct":
        obj = "piano" if f == "guitar" else f
        return Reply.json(
            {
                "direct_expression": f"Hey {subj}, please put away the {f}.",
                "subject": subj,
                "action": "put away",
                "object": obj,
                "intention": intention,
            }
        )
    if name == "vague_rate_direct":
        return Reply.json({"relevance": 2 if f == "lamp" else 5, "solvability": 5, "rationale": "r"})
    if name == "vague_indirect":
        if f == "laptop":
            c = [
                {"expression": f"Hey person1, that laptop {w}.", "superficial_interpretation": f"su {w}"}
                for w in ("is so lovely", "again", "sure is busy")
            ]
        else:
            c = [
                {"expression": e, "superficial_interpretation": s}
                for e, s in (
                    (
                        "Hey there, I see we're decorating with clutter today.",
                        "The speaker wants them to decorate more.",
                    ),
                    (
                        "Hey there, this room could win an obstacle course award.",
                        "The speaker wants them to enter a contest.",
                    ),
                    ("Hey there, Marie Kondo would like a word.", "The speaker wants them to call Marie Kondo."),
                )
            ]
        return Reply.json(dict(zip(("sarcasm", "humour", "meme_idiom"), c)))
    if name == "vague_select_indirect":
        return Reply.json(
            {"selected": 1, "consistency": 4, "ambiguity": 4, "naturalness": 4, "rating": 4, "rationale": "r"}
        )
    if name == "vague_fake_scene":
        return Reply.json(
            {
                "fake_caption": f"A talent show stage where a {f} is a prop.",
                "fake_scene_interpretation": f"The speaker wants {subj} to start the talent show act.",
            }
        )
    if name == "vague_nonexistent":
        revised = "A reviewer asked" in text
        sub = {"bicycle": "scooter" if revised else "helmet", "umbrella": "raincoat"}.get(f, "shelf")
        return Reply.json(
            {"substitute_object": sub, "ne_interpretation": f"The speaker wants {subj} to put away the {sub}."}
        )
    raise AssertionError(name)


def test_vague_recipe_through_the_double(data, llm_double, llm_double_resource, recipe_overrides):
    from assets.recipes.vague import assets as va
    from assets.recipes.vague import checks as pkg
    from resources.embedder import EmbedderResource
    from resources.storage import StorageResource

    # the fixture frames have tags but no detected persons
    recipe_overrides("vague", {"candidates": {"min_persons": 0, "max_per_batch": 10}})
    recipe_overrides("vague", {"options": {"ne_max_rounds": 2}})
    llm_double.responder = responder
    store = data
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    resources = {
        "storage": StorageResource(data_dir=str(store.data_dir)),
        "llm": llm_double_resource(),
        "embedder": EmbedderResource(),
    }
    assets = [va.vague_candidates, va.vague_direct, va.vague_indirect, va.vague_options, va.vague_items]
    res = dg.materialize(
        assets + list(pkg.CHECKS),
        partition_key=BATCH,
        resources=resources,
        instance=instance,
        selection=[a.key for a in assets],
    )
    assert res.success

    cands = store.read("vague_candidates")
    assert len(cands) == 6
    bike = cands.set_index("frame_id").loc["fr_bicycle"]
    assert bike["image_kind"] == "plain" and bike["image_path"] == "media/fr_bicycle.jpg"
    assert cands.set_index("frame_id").loc["fr_kettle", "image_path"] == "media/fr_kettle_ann.jpg"

    rejects = store.read("rejects").set_index("item_id")
    assert rejects.loc["fr_lamp", "reason"] == "low_direct_rating"
    assert rejects.loc["fr_guitar", "reason"] == "object_not_in_tags"
    assert rejects.loc["fr_laptop", "reason"] == "indirect_not_ambiguous"
    assert "names_object" in rejects.loc["fr_laptop", "detail"]
    assert rejects.loc["fr_umbrella", "reason"] == "ne_object_present"

    direct = store.read("vague_direct").set_index("frame_id")
    # the lamp the judge rated low stays for the raters (judge_keep false): people's ratings decide
    assert sorted(direct.index) == ["fr_bicycle", "fr_kettle", "fr_lamp", "fr_laptop", "fr_umbrella"]
    assert direct["judge_keep"].to_dict() == {f: f != "fr_lamp" for f in direct.index}
    assert "fr_lamp" not in set(store.read("vague_indirect")["frame_id"])  # no person rated: the judge's drop stands
    assert direct.loc["fr_bicycle", "subject"] == "someone"
    assert (direct["backend"] == "openai").all() and (direct["prompt_hash"].str.len() == 16).all()

    opts = store.read("vague_options")
    ne = opts[(opts["frame_id"] == "fr_bicycle") & (opts["option_type"] == "NE")].iloc[0]
    assert ne["substitute_object"] == "scooter" and ne["rounds"] == 1  # regenerated once with feedback

    items = store.read("vague_items")
    assert sorted(items["unit_id"]) == ["fr_bicycle", "fr_kettle"]
    for it in items.itertuples(index=False):
        types = list(it.option_types)
        assert sorted(types) == ["FS", "NE", "SU", "correct"]
        assert "ABCD"[types.index("correct")] == it.answer
        assert list(it.options)[types.index("correct")].startswith("The speaker wants")
        assert it.category == "humour" and "obstacle course" in it.question
        assert it.benchmark == "vague" and it.backend == "openai" and it.model == "double-model"
    assert items["answer"].nunique() == 2  # balanced positions within the batch

    calls = store.read("llm_calls")
    assert set(calls["stage"]) == {"vague_direct", "vague_indirect", "vague_options"}
    # the guitar reply failed the per-frame schema, got a repair turn, failed again
    assert (calls["outcome"] == "invalid").sum() >= 1
    attempts = store.read("llm_attempts")
    assert set(attempts.loc[attempts["item_id"] == "fr_umbrella", "round"]) == {0, 1, 2}

    checks = {(e.asset_key.path[-1], e.check_name): e for e in res.get_asset_check_evaluations()}
    assert checks[("vague_items", "contract_vague_items")].passed
    for asset in ("vague_direct", "vague_indirect", "vague_options"):
        ev = checks[(asset, f"{asset}_rules")]
        assert ev.passed, ev.metadata  # kept rows satisfy the paper's rules
    rates = checks[("vague_direct", "vague_direct_rules")].metadata
    assert rates["attempted"].value == 6 and rates["rejected"].value == 2
    assert rates["failure_rate_by_reason"].value == {
        "object_not_in_tags": round(1 / 6, 4),
        "low_direct_rating": round(1 / 6, 4),
    }
    assert checks[("vague_direct", "prompt_current_vague_direct")].passed
    assert checks[("vague_items", "mcq_duplicate_options")].passed


def test_each_candidate_is_rated_as_soon_as_its_triple_is_in(data, llm_double, llm_double_resource, recipe_overrides):
    """§4.2.1 generate → check → rate runs per candidate: the kettle's generation is held 2 s and
    the other candidates' ratings go out meanwhile (a stage-wide round would make every rating
    wait for the slowest generation); the rows are the same as without the hold."""
    from assets.recipes.vague import assets as va
    from resources.storage import StorageResource

    hold = 2.0
    recipe_overrides("vague", {"candidates": {"min_persons": 0, "max_per_batch": 10}})

    def held(body: dict) -> Reply:
        r = responder(body)
        name = body["response_format"]["json_schema"]["name"]
        if name == "vague_direct" and _which(message_text(body).split("Person labels in the image:")[-1]) == "kettle":
            r.delay = hold
        return r

    llm_double.responder = held
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    res = dg.materialize(
        [va.vague_candidates, va.vague_direct],
        partition_key=BATCH,
        resources={"storage": StorageResource(data_dir=str(data.data_dir)), "llm": llm_double_resource()},
        instance=instance,
    )
    assert res.success
    sent = [
        (q["t"], q["body"]["response_format"]["json_schema"]["name"], message_text(q["body"]))
        for q in llm_double.requests
        if q["path"].endswith("/chat/completions")
    ]
    held_at = min(t for t, n, text in sent if n == "vague_direct" and "kettle" in text.split("Person labels")[-1])
    others = [t for t, n, text in sent if n == "vague_rate_direct" and _which(text) != "kettle"]
    assert others and min(others) - held_at < hold, f"ratings waited {min(others) - held_at:.2f} s"
    direct = data.read("vague_direct")
    assert "fr_kettle" in set(direct["frame_id"]) and len(direct) >= 2


def test_direct_stage_on_the_batch_api_keeps_its_two_rounds(data, llm_double, llm_double_resource, recipe_overrides):
    """With ``batch_stages: [vague_direct]`` the per-candidate chains would make one Batch API job
    per request: the stage keeps its two stage-wide rounds there (one job for the generations, one
    for the ratings), with the rows of the per-candidate run."""
    from assets.recipes.vague import assets as va
    from resources.storage import StorageResource

    recipe_overrides("vague", {"candidates": {"min_persons": 0, "max_per_batch": 10}})
    llm_double.responder = responder
    res_ = {"storage": StorageResource(data_dir=str(data.data_dir))}
    rows = {}
    for mode, llm in (
        ("batch", llm_double_resource(batch_stages=["vague_direct"], batch_poll_s=0.01)),
        ("flow", llm_double_resource(cache_path=str(data.data_dir / "other_cache.sqlite"))),
    ):
        instance = dg.DagsterInstance.ephemeral()
        instance.add_dynamic_partitions("batches", [BATCH])
        assert dg.materialize(
            [va.vague_candidates, va.vague_direct],
            partition_key=BATCH,
            resources={**res_, "llm": llm},
            instance=instance,
        ).success
        rows[mode] = data.read("vague_direct").sort_values("frame_id").reset_index(drop=True)
        if mode == "batch":
            jobs = [q for q in llm_double.requests if q["path"].endswith("/batches") and q["body"]]
            assert len(jobs) == 2
    cols = ["frame_id", "direct_expression", "subject", "action", "object", "relevance", "solvability"]
    pd.testing.assert_frame_equal(rows["batch"][cols], rows["flow"][cols])
