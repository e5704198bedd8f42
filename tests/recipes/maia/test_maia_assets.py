"""MAIA assets end to end through the LLM test double, with scripted replies for every branch:
pass, yes/no question reject, inconsistent answer, equal strings and overlap → rephrase,
foil entailment → regenerate, structural-check reject, and the import path."""

import json
import time

import dagster as dg
import pandas as pd
import pytest
from PIL import Image

import assets.recipes.maia.assets as A
from forge.storage import TableStore
from resources.nli import NLIResource
from resources.storage import StorageResource
from tests.llm_double import Reply
from tests.llm_double.server import message_text

CLIP = "vid1_eng"
Q_CHEF = "Where is the chef standing during the video?"
Q_BIKE = "Where is the bicycle parked in the scene?"
Q_MOOD = "What mood does the chef show while cooking?"
Q_YESNO = "Is the chef happy with the pizza?"
BASE = [
    "The chef stands beside the oven.",
    "He waits near a wooden counter.",
    "Behind the marble table, close to customers.",
    "Right next to the hot brick furnace.",
    "I think he is in the kitchen area.",
    "At his workstation by the window.",
    "Close to the entrance of the pizzeria.",
    "Inside the restaurant, opposite the door.",
]
CHEF = BASE[:5] + [BASE[4], BASE[6], "The chef stands beside the oven today."]
MOODS = [
    "He looks focused.",
    "Calm and concentrated on the dough.",
    "BANANA split tastes great.",
    "Quite cheerful, smiling often.",
    "Relaxed while kneading.",
    "Serious but content.",
    "Happy with his work.",
    "Attentive, almost proud.",
]
_WORDS = (
    "apple",
    "brick",
    "cloud",
    "delta",
    "ember",
    "fjord",
    "glade",
    "harbor",
    "igloo",
    "jungle",
    "kettle",
    "lagoon",
    "meadow",
    "nectar",
    "orchard",
    "prairie",
    "quarry",
    "riverbank",
    "savanna",
    "tundra",
    "acorn",
    "badger",
    "canyon",
    "dune",
    "falcon",
    "geyser",
    "heron",
    "iris",
    "jasmine",
    "kiwi",
    "lantern",
    "maple",
    "nutmeg",
    "otter",
    "pebble",
    "quill",
    "raven",
    "saffron",
    "thistle",
    "umbrella",
    "violet",
    "walnut",
    "yarrow",
    "zephyr",
    "almond",
    "beacon",
    "cactus",
    "dolphin",
    "eagle",
    "fern",
    "granite",
    "hazel",
    "ivy",
    "juniper",
    "koala",
    "lemon",
    "nickel",
    "olive",
    "pine",
    "quartz",
    "reef",
    "sparrow",
    "tulip",
    "urchin",
    "valley",
    "willow",
    "yak",
    "zinc",
    "anchor",
    "bamboo",
    "cedar",
    "daisy",
    "elm",
    "flint",
    "garnet",
    "hemlock",
    "indigo",
    "jade",
    "kelp",
    "lilac",
    "mango",
    "nugget",
    "oak",
    "peach",
    "quince",
    "robin",
    "sage",
    "thyme",
    "velvet",
    "wren",
    "yew",
    "amber",
    "birch",
    "coral",
    "dove",
    "emerald",
    "fig",
    "gull",
    "honey",
    "lotus",
)
# every rephrase is new wording that shares no word with anything else in the pool (50 per test, as
# many as MAIA's pools of eight people's overlapping answers ask for); the words are
# handed out afresh for each test (the ``corpus`` fixture): other files reuse this responder, and
# words used up by an earlier test would make a later one's rephrases fail
_FRESH: list[str] = []


def reset_fresh_words() -> None:
    _FRESH[:] = [f"Near the {a} and {b}." for a, b in zip(_WORDS[::2], _WORDS[1::2], strict=True)]


def fresh() -> str:
    if not _FRESH:
        raise AssertionError("out of fresh words")
    return _FRESH.pop(0)


def user_turn(body):
    return [m for m in body["messages"] if m["role"] == "user"][-1]


def text_of(msg):
    c = msg["content"]
    return c if isinstance(c, str) else " ".join(p.get("text", "") for p in c if p.get("type") == "text")


def field(body, prefix):
    """``prefix`` line of the prompt's own user turn (refine appends feedback turns after it)."""
    for msg in [m for m in body["messages"] if m["role"] == "user"][::-1]:
        for line in text_of(msg).splitlines():
            if line.startswith(prefix):
                return line[len(prefix) :].strip()
    return ""


def responder(body):
    name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
    full = message_text(body)
    if name == "maia_questions":
        if "Category: spatial total" in full:
            return Reply.json({"question_a": Q_CHEF, "question_b": Q_BIKE})
        return Reply.json({"question_a": Q_MOOD, "question_b": Q_YESNO})
    if name == "maia_answers":  # one annotator per request: its seed is its index in the pool
        q, i = field(body, "Question:"), int(body["seed"]) % 8  # a fresh draw keeps the annotator
        if q == Q_CHEF:  # one equal pair (4/5) and one overlapping pair (0/7)
            return Reply.json({"answer": CHEF[i]})
        if q == Q_MOOD:  # answer 3 does not answer the question, until told so
            return Reply.json({"answer": "Focused on the dough." if i == 2 and "Feedback" in full else MOODS[i]})
        colors = ["red", "blue", "green", "gray", "pink", "teal", "gold", "navy"]
        return Reply.json(
            {"answer": f"Bicycle spot {colors[i]} alpha" if i == 0 else f"{colors[i]} bicycle leaning idea{i}"}
        )
    if name == "maia_consistency":
        return Reply.json({"score": 0 if "BANANA" in field(body, "A:") else 1})
    if name == "maia_pool_contradiction":
        return Reply.json({"contradiction": False, "conflicting": []})
    if name in ("maia_rephrase_equal", "maia_rephrase_overlap"):
        return Reply.json({"text": fresh()})
    if name == "maia_statement":
        return Reply.json({"statement": field(body, "A:").replace("I think ", "")})
    if name and name.startswith("maia_foil_") and name != "maia_foil_structural":
        caption = field(body, "C:")
        words = caption.rstrip(".").split()
        if "bicycle" in caption.lower():
            return Reply.json({"foil": " ".join(words[:-1] + ["INVALID"])})
        if "kitchen" in caption and "entailed by the caption" not in full:
            return Reply.json({"foil": " ".join(words[:-1] + ["ENTAILED"])})
        return Reply.json({"foil": " ".join(words[:-1] + ["elsewhere"])})
    if name == "maia_foil_structural":
        return Reply.json({"valid": "INVALID" not in field(body, "F:"), "reason": "scripted"})
    if name == "nli":
        return Reply.json({"label": "entailment" if "ENTAILED" in field(body, "S2:") else "contradiction"})
    return None


@pytest.fixture
def corpus(tmp_path, monkeypatch, recipe_overrides):
    """One clip with 4 real frames, its evidence and video row, in a fresh data dir."""
    reset_fresh_words()
    data = tmp_path / "data"
    store = TableStore(data)
    (data / "media" / "frames").mkdir(parents=True)
    frames = []
    for i in range(4):
        rel = f"media/frames/{CLIP}_f{i:03d}.jpg"
        Image.new("RGB", (64, 48), (40 * i, 80, 120)).save(data / rel)
        frames.append(
            {
                "frame_id": f"{CLIP}_f{i:03d}",
                "batch": "b1",
                "source": "s",
                "item_id": "vid1",
                "clip_id": CLIP,
                "kind": "clip_frame",
                "frame_index": i,
                "timestamp_s": float(i),
                "path": rel,
                "width": 64,
                "height": 48,
            }
        )
    store.write("frames", pd.DataFrame(frames), "b1")
    store.write(
        "clips",
        pd.DataFrame(
            [
                {
                    "clip_id": CLIP,
                    "batch": "b1",
                    "source": "s",
                    "video_id": "vid1",
                    "is_engaging": True,
                    "start_s": 0.0,
                    "end_s": 30.0,
                }
            ]
        ),
        "b1",
    )
    store.write(
        "evidence",
        pd.DataFrame(
            [
                {
                    "unit": "clip",
                    "unit_id": CLIP,
                    "batch": "b1",
                    "tags": ["oven", "pizza"],
                    "persons": 1,
                    "ocr_text": None,
                }
            ]
        ),
        "b1",
    )
    store.write("videos", pd.DataFrame([{"video_id": "vid1", "batch": "b1", "channel": "PizzaChan"}]), "b1")
    # English scripted replies: the `en` option (the paper default `it` has its own tests)
    recipe_overrides(
        "maia",
        {"language": "en", "questions": {"categories": ["spatial_total", "sentiment"]}, "foils": {"max_rounds": 1}},
    )
    return store


def materialize(store, resource, selection):
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", ["b1"])
    res = dg.materialize(
        selection,
        partition_key="b1",
        instance=instance,
        resources={
            "storage": StorageResource(data_dir=str(store.data_dir)),
            "llm": resource,
            "nli": NLIResource(backend="llm"),
        },
    )
    assert res.success
    return res


ALL = [A.maia_questions, A.maia_answer_pools, A.maia_statements, A.maia_foils, A.maia_items]


def rejects(store):
    return store.read("rejects")


def test_generated_path_every_branch(corpus, llm_double, llm_double_resource):
    llm_double.responder = responder
    store = corpus
    materialize(store, llm_double_resource(), ALL)
    rj = rejects(store)
    reasons = set(zip(rj["stage"], rj["reason"]))

    # questions: the yes/no one is rejected, the others kept with their pair overlap
    qs = store.read("maia_questions")
    assert set(qs["question"]) == {Q_CHEF, Q_BIKE, Q_MOOD}
    # the yes/no question is asked again (a new seed) until the bound: a gap of the grid, reported
    assert (rj[rj["reason"] == "yes_no_question"]["item_id"].value_counts() == 1 + 3).all()
    assert (qs["origin"] == "generated").all() and (qs["backend"] == "openai").all()
    assert qs.loc[qs["question"] == Q_CHEF, "pair_overlap"].iloc[0] == 0.0

    # answers: the inconsistent one is regenerated with feedback; the equal and overlapping ones are rephrased
    ans = store.read("maia_answer_pools")
    chef = ans[ans["question_id"] == qs.loc[qs["question"] == Q_CHEF, "question_id"].iloc[0]]
    assert len(chef) == 8 and chef["rephrased"].sum() == 2
    assert set(chef.loc[chef["rephrased"] > 0, "idx"]) == {5, 7}
    mood = ans[ans["question_id"] == qs.loc[qs["question"] == Q_MOOD, "question_id"].iloc[0]]
    assert len(mood) == 8 and not mood["answer"].str.contains("BANANA").any()
    assert mood.set_index("idx").loc[2, ["answer", "regenerated"]].tolist() == ["Focused on the dough.", 1]
    assert mood.loc[mood["idx"] != 2, "regenerated"].eq(0).all()
    assert ("maia_answer_pools", "inconsistent_answer") not in reasons  # regenerated, not dropped
    stats = store.read("maia_pool_stats")
    assert stats.set_index(["kind", "question_id"]).loc[("answers", mood["question_id"].iloc[0]), "n_inconsistent"] == 1
    a_chef = stats[(stats["kind"] == "answers") & (stats["question_id"] == chef["question_id"].iloc[0])].iloc[0]
    assert a_chef["equal_pairs_before"] == 1 and a_chef["equal_pairs_after"] == 0
    assert a_chef["pairs_over_threshold_before"] >= 2 and a_chef["pairs_over_threshold_after"] == 0
    assert 0 < a_chef["ttr_cw_after"] <= 1 and a_chef["overlap_max_after"] <= 0.5
    assert set(stats["kind"]) == {"answers", "statements"}

    # statements: one per kept answer
    st = store.read("maia_statements")
    assert len(st) == len(ans)

    # foils: the kitchen foil was entailed, regenerated and accepted; bicycle foils fail the structural check
    # on every draw: drawn again (reject rows for the discarded draws), then kept flagged for review
    fo = store.read("maia_foils")
    att = store.read("llm_attempts")
    kitchen = fo[fo["statement"].str.contains("kitchen")]
    assert len(kitchen) == 1 and kitchen.iloc[0]["rounds"] == 1 and kitchen.iloc[0]["nli_label"] == "contradiction"
    k_att = att[(att["stage"] == "maia_foils") & (att["item_id"] == kitchen.iloc[0]["statement_id"])]
    assert k_att.loc[k_att["step"] == "check:nli_contradiction", "verdict"].tolist() == ["major"]
    bike = qs.loc[qs["question"] == Q_BIKE, "question_id"].iloc[0]
    b_fo = fo[fo["question_id"] == bike]
    assert len(b_fo) == 8 and b_fo["review"].str.startswith("refine_max_rounds").all()
    assert b_fo["foil"].str.endswith("INVALID").all() and not b_fo["structural_valid"].any()
    assert fo.loc[fo["question_id"] != bike, "review"].isna().all()
    foil_rj = rj[(rj["stage"] == "maia_foils") & (rj["reason"] == "refine_max_rounds")]
    reseeds = A.settings()["foils"]["reseed_attempts"]
    assert len(foil_rj) == 8 * reseeds and set(foil_rj["item_id"]) == set(b_fo["statement_id"])
    assert ("maia_foils", "pool_too_small") not in reasons  # no pool is dropped for its foils
    assert fo.groupby("question_id").size().eq(8).all() and fo["question_id"].nunique() == 3
    ok = fo[fo["question_id"] != bike]
    assert (ok["edit_distance"] == 1).all() and ok["structural_valid"].all()
    assert (fo["nli_label"] != "entailment").all()
    assert set(att["stage"]) >= {"maia_answer_pools", "maia_foils"}

    # items: one SV pair per foil, open-ended per kept question with its references; the bicycle
    # pool's items say why a reviewer should look at them
    items = store.read("maia_items")
    sv, oe = items[items["task"] == "statement_verification"], items[items["task"] == "open_ended"]
    assert len(sv) == len(fo) == 24 and set(sv["answer"]) <= {"A", "B"}
    per_q = sv["labels"].map(lambda s: json.loads(s)["question_id"]).value_counts()
    assert per_q.eq(8).all() and per_q[bike] == 8
    review = items.assign(q=items["labels"].map(lambda s: json.loads(s)["question_id"]))
    review["review"] = review["extra"].map(lambda s: json.loads(s).get("review"))
    assert review.loc[review["q"] == bike, "review"].map(lambda r: r[0].startswith("refine_max_rounds")).all()
    assert review.loc[review["q"] != bike, "review"].isna().all()
    assert len(oe) == 3 and ans["question_id"].nunique() == 3 and all(len(r) == 8 for r in oe["references"])
    assert (items["channel"] == "PizzaChan").all() and (items["source_item_id"] == "vid1").all()
    assert all(len(p) == 4 for p in items["media_paths"])
    calls = store.read("llm_calls")
    assert {"maia_questions", "maia_answer_pools", "maia_statements", "maia_foils", "maia_foils_nli"} <= set(
        calls["stage"]
    )


def test_overlap_unresolved_is_kept_flagged_for_review(corpus, llm_double, llm_double_resource, recipe_overrides):
    """A rephrase that keeps overlapping for every round (bounded) leaves the answer in its pool,
    flagged for review (App. A.4: the paper edited those by hand)."""

    def stubborn(body):
        name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
        if name == "maia_rephrase_overlap":
            return Reply.json({"text": "The chef stands beside the oven now."})
        return responder(body)

    llm_double.responder = stubborn
    recipe_overrides("maia", {"pools": {"max_rephrase_rounds": 2}})
    materialize(corpus, llm_double_resource(), [A.maia_questions, A.maia_answer_pools])
    assert "overlap_unresolved" not in set(rejects(corpus)["reason"])
    ans = corpus.read("maia_answer_pools")
    assert ans.groupby("question_id").size().eq(8).all()
    flagged = ans[ans["review"].notna()]
    assert len(flagged) and flagged["review"].str.startswith("overlap_unresolved").all()
    stats = corpus.read("maia_pool_stats")
    assert stats["flagged"].sum() == len(flagged) and (stats["status"] == "kept").all()
    att = corpus.read("llm_attempts")
    over = att[att["step"] == "rephrase:overlap"]
    assert over["round"].max() == 2 and (over["verdict"] == "major").all()


def test_import_path(corpus, llm_double, llm_double_resource, tmp_path, recipe_overrides):
    path = tmp_path / "human.jsonl"
    path.write_text(
        json.dumps({"clip_id": CLIP, "category": "Total Spatial", "question": Q_CHEF, "answers": BASE}) + "\n"
    )
    recipe_overrides("maia", {"questions": {"import_path": str(path), "import_only": True}})
    llm_double.responder = responder
    materialize(corpus, llm_double_resource(), ALL)
    qs = corpus.read("maia_questions")
    assert qs[["question", "origin", "backend", "slot"]].values.tolist() == [[Q_CHEF, "imported", "human", "a"]]
    ans = corpus.read("maia_answer_pools")
    assert sorted(ans["answer"]) == sorted(BASE) and (ans["origin"] == "imported").all()
    calls = corpus.read("llm_calls")
    assert not (calls["stage"] == "maia_questions").any()
    assert "maia_answers" not in set(calls["prompt_name"]) if "prompt_name" in calls else True
    items = corpus.read("maia_items")
    oe = items[items["task"] == "open_ended"].iloc[0]
    assert sorted(oe["references"]) == sorted(BASE) and oe["question"] == Q_CHEF
    assert (items["task"] == "statement_verification").sum() == 8


def test_asset_checks_report_rates(corpus, llm_double, llm_double_resource):
    from assets.recipes.maia import checks as C

    llm_double.responder = responder
    materialize(corpus, llm_double_resource(), ALL)
    storage = StorageResource(data_dir=str(corpus.data_dir))
    ent = C.maia_foil_entailment_rate(storage=storage)
    assert ent.passed and ent.metadata["entailment_rate_accepted"].value == 0.0
    assert ent.metadata["entailment_rate_first_generation"].value > 0  # the kitchen foil
    qs = C.maia_questions_open_ended(storage=storage)
    assert qs.passed and qs.metadata["yes_no"].value == 0
    pools = C.CHECKS[1](storage=storage)
    assert pools.passed and pools.metadata["pools_violating"].value == 0
    assert pools.metadata["inconsistent_rate"].value > 0


def test_stub_backend_keeps_items_flowing(corpus, tmp_path):
    """The offline demo: placeholder verdicts are recorded, not applied; every item says stub."""
    from resources.llm import LLMResource

    t0 = time.perf_counter()
    materialize(corpus, LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")), ALL)
    items = corpus.read("maia_items")
    assert (items["task"] == "statement_verification").sum() > 0 and (items["task"] == "open_ended").sum() > 0
    assert (items["backend"] == "stub").all()
    rj = rejects(corpus)
    # a check failing on placeholder text is recorded on the row (advisory), never a reject
    assert "pair_same_focus" not in set(rj["reason"])
    att = corpus.read("llm_attempts")
    assert att.loc[att["step"] != "generate", "advisory"].all()  # NLI / structural / rephrase verdicts
    print(f"stub run: {len(items)} items in {time.perf_counter() - t0:.1f}s")


def test_checks_fail_closed(corpus, llm_double, llm_double_resource):
    """When the LLM call behind a check fails, the content is never kept as if it had passed: one
    answer's consistency call fails on every draw (each discarded draw a reject row, then the answer
    kept flagged for review) and the bicycle pool's contradiction call fails (the pool kept, flagged)."""

    def faulty(body):
        name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
        if name == "maia_consistency" and "Relaxed while kneading" in field(body, "A:"):
            return Reply.error(400, "scripted: consistency judge unavailable")
        if name == "maia_pool_contradiction" and "bicycle" in message_text(body).lower():
            return Reply.error(400, "scripted: contradiction judge unavailable")
        return responder(body)

    llm_double.responder = faulty
    materialize(corpus, llm_double_resource(), [A.maia_questions, A.maia_answer_pools])
    rj = rejects(corpus)
    rj = rj[rj["stage"] == "maia_answer_pools"]
    assert (rj["reason"] == "consistency_check_failed").sum() == A.settings()["answers"]["reseed_attempts"]
    answers = corpus.read("maia_answer_pools").set_index("answer")
    assert answers.loc["Relaxed while kneading.", "review"].startswith("consistency_check_failed")
    assert "judge unavailable" in answers.loc["Relaxed while kneading.", "review"]
    bike = corpus.read("maia_questions").set_index("question").loc[Q_BIKE, "question_id"]
    b_ans = answers[answers["question_id"] == bike]
    assert len(b_ans) == 8 and b_ans["review"].str.startswith("contradiction_check_failed").all()
    stats = corpus.read("maia_pool_stats").set_index("question_id")
    assert stats.loc[bike, "status"] == "kept" and "contradiction_check_failed" in stats.loc[bike, "review"]


def test_batches_of_a_stage_run_at_once(corpus, llm_double, llm_double_resource, recipe_overrides):
    """A backfill over two batches: b1's question request is held by the endpoint, b2's goes out
    meanwhile (one batch after another, b2 would wait for b1); each batch keeps its own rows."""
    for table in ("frames", "clips", "evidence", "videos"):
        df = corpus.read(table)
        for col in ("frame_id", "clip_id", "unit_id", "path"):
            if col in df:
                df[col] = df[col].str.replace(CLIP, "vid2_eng")
        df["batch"] = "b2"
        if table == "evidence":
            df["tags"] = [["bicycle", "street"]]
        corpus.write(table, df, "b2")
    for p in (corpus.data_dir / "media" / "frames").glob(f"{CLIP}_*.jpg"):
        p.with_name(p.name.replace(CLIP, "vid2_eng")).write_bytes(p.read_bytes())
    # one draw per cell: the yes/no question is not asked again here (test_generated_path_every_branch)
    recipe_overrides("maia", {"language": "en", "questions": {"categories": ["sentiment"], "regenerate_rounds": 0}})

    def held(body):
        if "oven" in message_text(body):  # b1's evidence
            return Reply.json({"question_a": Q_MOOD, "question_b": Q_YESNO}, delay=2.0)
        return Reply.json({"question_a": Q_BIKE, "question_b": Q_CHEF})

    llm_double.responder = held
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", ["b1", "b2"])
    res = dg.materialize(
        [A.maia_questions],
        instance=instance,
        resources={"storage": StorageResource(data_dir=str(corpus.data_dir)), "llm": llm_double_resource()},
        tags={"dagster/asset_partition_range_start": "b1", "dagster/asset_partition_range_end": "b2"},
    )
    assert res.success
    assert len(llm_double.chat_requests) == 2
    t = sorted(q["t"] for q in llm_double.requests if q["path"].endswith("/chat/completions"))
    # b2's request went out before b1's held reply came back (whichever reached the double first)
    assert t[1] - t[0] < 2.0, f"the second batch's request waited {t[1] - t[0]:.2f} s for the first's reply"
    qs = corpus.read("maia_questions")
    got = dict(zip(qs["question"], qs["batch"]))  # (the yes/no question is rejected by its check)
    assert got == {Q_MOOD: "b1", Q_BIKE: "b2", Q_CHEF: "b2"}


def test_foils_without_text_leave_gaps_and_wrong_language_is_redrawn(corpus, llm_double, llm_double_resource):
    """A foil no draw produces is a gap (``no_foil``) its pool's items report, never a dropped pool;
    a foil in another language is discarded as ``wrong_language`` and drawn again."""

    def faulty(body):
        name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
        if name and name.startswith("maia_foil_") and name != "maia_foil_structural":
            caption = field(body, "C:")
            if "bicycle" in caption.lower():
                return Reply.error(400, "scripted: foil model down")
            if "kitchen" in caption and "seed" not in body:  # the first draw comes back in Italian
                return Reply.json({"foil": "Il cuoco si trova in una cucina molto piccola e affollata di persone."})
        return responder(body)

    llm_double.responder = faulty
    materialize(corpus, llm_double_resource(), ALL)
    rj = rejects(corpus)
    foil_rj = rj[rj["stage"] == "maia_foils"]
    assert (foil_rj["reason"] == "no_foil").sum() == 8  # the bicycle pool's 8 statements
    assert (foil_rj["reason"] == "wrong_language").sum() == 1
    fo = corpus.read("maia_foils")
    qs = corpus.read("maia_questions")
    bike = qs.loc[qs["question"] == Q_BIKE, "question_id"].iloc[0]
    assert bike not in set(fo["question_id"]) and not fo["foil"].str.contains("cucina").any()
    assert fo["statement"].str.contains("kitchen").sum() == 1  # its English redraw kept
    items = corpus.read("maia_items")
    b_items = items[items["labels"].map(lambda s: json.loads(s)["question_id"]) == bike]
    assert b_items["task"].tolist() == ["open_ended"]  # the question stays, its 8 pairs are gaps
    assert json.loads(b_items.iloc[0]["extra"])["review"] == ["pool_short: 0/8 members"]
