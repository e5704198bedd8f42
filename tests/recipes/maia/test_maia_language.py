"""MAIA's language setting (paper: ``it``), the Italian prompt set and its parity with the English
one, Italian-aware checks, and the causal split into explicit / implicit (App. A.2 fn. 10)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

import assets.recipes.maia.assets as A
from assets.recipes.maia.logic import foils as F
from assets.recipes.maia.logic import questions as Q
from assets.recipes.maia.logic.items import build_items
from assets.recipes.maia.logic.language import LanguagePrompts, prompt_file, prompts_dir, recipe_language
from assets.recipes.maia.logic.release import causal_type_of_record
from assets.recipes.maia.logic.taxonomy import CAUSAL_TYPES, category, category_names
from forge.benchmarks.registry import get
from forge.benchmarks.settings import recipe_settings
from forge.checks.text import guess_language, tokens
from forge.evals.scoring import Scorer, score_benchmark
from forge.llm.backends import StubBackend
from forge.llm.prompts import PromptError, load_prompt, placeholders
from forge.llm.types import LLMRequest
from tests.llm_double.plausible import Plausible
from tests.recipes.maia.test_maia_assets import corpus  # noqa: F401 (fixture)

ROOT = A.PROMPTS
EN, IT = prompts_dir(ROOT, "en"), prompts_dir(ROOT, "it")


# -- setting and prompt sets -------------------------------------------------------------------
def test_paper_language_is_italian_and_unknown_languages_fail():
    assert recipe_settings("maia", "paper")["language"] == "it"
    assert recipe_language({}) == "it"
    assert recipe_language({"language": "EN"}) == "en"
    with pytest.raises(ValueError, match="language"):
        recipe_language({"language": "de"})


def test_italian_set_has_every_english_prompt_with_same_contract():
    en_files = sorted(p.name for p in EN.glob("*.yaml"))
    it_files = sorted(p.name for p in IT.glob("*.yaml"))
    assert en_files == it_files and len(en_files) == 9 + len(category_names())  # 9: control_judge (App. A.3) among them
    for name in en_files:
        e, i = load_prompt(EN / name), load_prompt(IT / name)
        raw_e, raw_i = yaml.safe_load((EN / name).read_text()), yaml.safe_load((IT / name).read_text())
        assert i.name == e.name, name
        assert set(i.variables) == set(e.variables), name
        assert i.schema == e.schema, name
        assert i.params == e.params and i.strict == e.strict, name
        used = lambda p: placeholders(p.system) | placeholders(p.user)  # noqa: E731
        assert used(i) == used(e), name
        assert len(i.examples) == len(e.examples), name
        # the declared language is the text's language
        assert (i.language, e.language) == ("it", "en") and "language" not in raw_e and raw_i["language"] == "it"
        text = lambda p: " ".join(m["content"] for m in p.render({v: "x" for v in p.variables}))  # noqa: E731
        assert guess_language(text(i)) == "it" and guess_language(text(e)) == "en", name
        # few-shot replies keep the schema's keys
        for ex_e, ex_i in zip(e.examples, i.examples):
            assert set(ex_e["assistant"]) == set(ex_i["assistant"]), name


def test_missing_italian_prompt_is_an_error_not_english(tmp_path):
    (tmp_path / "it").mkdir()
    (tmp_path / "statement.yaml").write_text((EN / "statement.yaml").read_text())
    assert prompt_file(tmp_path, "en", "statement") == tmp_path / "statement.yaml"
    with pytest.raises(PromptError, match="no 'it' version"):
        prompt_file(tmp_path, "it", "statement")
    lang = {"v": "it"}
    P = LanguagePrompts(tmp_path, ("statement",), lambda: lang["v"])
    with pytest.raises(PromptError):
        P["statement"]
    lang["v"] = "en"
    assert P["statement"] == tmp_path / "statement.yaml"


def test_assets_pick_the_prompt_set_of_the_configured_language(recipe_overrides):
    recipe_overrides("maia", {})  # paper: it
    assert A.P["statement"] == IT / "statement.yaml" and A.P["foil_causal"] == IT / "foil_causal.yaml"
    assert load_prompt(A.P["questions"]).language == "it"
    recipe_overrides("maia", {"language": "en"})
    assert A.P["statement"] == EN / "statement.yaml"


# -- Italian checks ----------------------------------------------------------------------------
def test_italian_tokenisation_splits_elision():
    assert tokens("L'uomo esce dall'auto", "it") == ["l'", "uomo", "esce", "dall'", "auto"]
    assert tokens("L'uomo esce dall'auto", "en") == ["l'uomo", "esce", "dall'auto"]


@pytest.mark.parametrize(
    "question,yes_no",
    [
        ("Perché il bicchiere si è rotto?", False),
        ("Dov'è il pubblico?", False),  # dov' + è
        ("Quand'è che la donna applaude?", False),
        ("In quanto tempo si concluderà la partita di bocce?", False),
        ("Che cosa succederebbe se l'adulto non fermasse il bambino?", False),
        ("Chi c'è dal lato opposto del campo?", False),
        ("Il pizzaiolo è contento della pizza?", True),
        ("C'è una macchina nel video?", True),
        ("È vero che il cane corre?", True),
        ("Il cane corre o cammina?", False),  # an alternative is not yes/no
    ],
)
def test_italian_yes_no_questions(question, yes_no):
    assert Q.is_yes_no(question, "it") is yes_no


def test_italian_question_problems_and_audio():
    assert Q.question_problems("Che canzone canta il ragazzo?", lang="it") == ["audio_based_question"]
    assert Q.question_problems("Dove si trova la bicicletta?", lang="it") == []
    assert Q.question_problems("Il cane dorme sul divano?", lang="it") == ["yes_no_question"]


def test_question_in_the_wrong_language_is_wrong_language_before_any_form_rule():
    """An Italian build used to reject an English question as ``yes_no_question`` (no Italian
    interrogative word in it); it is ``wrong_language``, and nothing else, in either direction."""
    english = ["Where is the chef standing during the video?", "Is the chef happy with the pizza?"]
    for q in english:
        assert Q.question_problems(q, lang="it") == ["wrong_language"], q
        assert Q.question_problems(q, lang="en") in ([], ["yes_no_question"])
    assert Q.question_problems("Che cosa succede al cane dopo la partita?", lang="en") == ["wrong_language"]
    assert Q.question_problems("Il cane dorme sul divano?", lang="en") == ["wrong_language"]


def test_italian_pair_focus_uses_italian_function_words_and_elision():
    a, b = "Dove va l'uomo con l'ombrello?", "Che cosa fa l'uomo con l'ombrello?"
    # it: content words {va, uomo, ombrello} vs {fa, uomo, ombrello}: 2 of 4 shared
    assert Q.pair_overlap(a, b, "it") == pytest.approx(0.5)
    assert Q.same_focus(a, b, 0.4, "it")
    # en: "l'uomo" / "l'ombrello" are single tokens and Italian articles count as content words
    assert Q.pair_overlap(a, b, "en") != pytest.approx(0.5)


def test_italian_minimal_edit_counts_elided_words():
    st = "Il pizzaiolo mette la pizza nell'auto."
    assert F.edit_size(st, "Il pizzaiolo mette la pizza nell'acqua.", "it") == (1, pytest.approx(1 / 7))
    check = F.minimal_edit_check(0.3, "it")
    req = LLMRequest(item_id="s", prompt=None, variables={"caption": st})
    assert check(req, {"foil": "Il pizzaiolo mette la pizza nell'acqua."}) is None
    v = check(req, {"foil": "Una donna prende il caffè al bar."})
    assert v is not None and v.label == "major" and "non è minima" in v.feedback  # Italian feedback turn
    assert F.structural_verdict({"valid": False, "reason": "stesso luogo"}, "it").feedback.startswith("Controllo")
    assert set(F.FEEDBACK["it"]) == set(F.FEEDBACK["en"])


# -- causal explicit / implicit ----------------------------------------------------------------
def test_causal_types_split_the_clips_in_halves():
    t = Q.causal_types(["c4", "c1", "c3", "c2"])
    assert t == {"c1": "explicit", "c2": "explicit", "c3": "implicit", "c4": "implicit"}
    assert list(Q.causal_types(["a", "b", "c"]).values()).count("explicit") == 2
    assert set(CAUSAL_TYPES) == {"explicit", "implicit"}


def test_causal_type_texts_in_both_languages():
    v_it = Q.category_variables("causal", "it", "explicit")
    assert v_it["category"] == "causale esplicito" and "bicchiere" in v_it["example"]
    v_en = Q.category_variables("causal", "en", "implicit")
    assert v_en["category"] == "implicit causal" and "umbrella" in v_en["example"]
    assert category("spatial_total", "it").label == "spaziale totale"
    for name in category_names():  # every category has its Italian texts
        c = category(name, "it")
        assert guess_language(f"{c.definition} {c.structural}") == "it", name


def test_import_reads_causal_type(tmp_path):
    p = tmp_path / "q.jsonl"
    rows = [
        {"clip_id": "c", "category": "causale implicita", "question": "Perché piove?"},
        {"clip_id": "c", "category": "causal", "causal_type": "explicit", "question": "Perché cade?"},
        {"clip_id": "c", "category": "sentiment", "question": "Che umore ha?"},
    ]
    p.write_text("\n".join(json.dumps(r) for r in rows))
    got, bad = Q.load_import(p)
    assert not bad
    assert [(q.category, q.causal_type) for q in got] == [
        ("causal", "implicit"),
        ("causal", "explicit"),
        ("sentiment", None),
    ]


def test_release_causal_type():
    assert causal_type_of_record("ImplicitCausal_A", {}) == "implicit"
    assert causal_type_of_record("Causale", {"causal_type": "esplicita"}) == "explicit"
    assert causal_type_of_record("CausaleEsplicita", {}) is None  # the release's name for the whole category


def _question(qid, cat, ctype):
    return {
        "question_id": qid,
        "batch": "b1",
        "clip_id": "c1",
        "source_item_id": "v1",
        "source": "s",
        "category": cat,
        "macro_category": cat,
        "causal_type": ctype,
        "slot": "a",
        "question": "Perché?",
        "origin": "generated",
        "media_paths": [],
        "backend": "openai",
    }


def test_items_label_the_causal_type():
    qs = pd.DataFrame([_question("q1", "causal", "implicit"), _question("q2", "sentiment", None)])
    # whole pools of one member (pool_size=1): items are built only from whole pools
    ans = pd.DataFrame(
        [
            {
                "question_id": q,
                "answer_id": f"{q}_a0",
                "idx": 0,
                "answer": "Perché piove.",
                "backend": "openai",
                "model": "m",
                "prompt_hash": "h",
            }
            for q in ("q1", "q2")
        ]
    )
    st = pd.DataFrame([{"question_id": q, "statement_id": f"{q}_s0"} for q in ("q1", "q2")])
    fo = pd.DataFrame([{"question_id": q, "foil_id": f"{q}_f0", "statement_id": "-"} for q in ("q1", "q2")])
    items = build_items(qs, ans, st, fo, {"c1": {"item_id": "v1"}}, seed="s", pool_size=1)
    labels = {json.loads(r)["question_id"]: json.loads(r) for r in items["labels"]}
    assert labels["q1"]["causal_type"] == "implicit" and "causal_type" not in labels["q2"]


def test_scores_split_causal_into_explicit_and_implicit():
    sv, rows = "statement_verification", []
    # explicit question right, implicit question wrong; a sentiment question right
    for qid, ctype, cat, ok in (
        ("e", "explicit", "causal", True),
        ("i", "implicit", "causal", False),
        ("s", None, "sentiment", True),
    ):
        rows.append((sv, f"{qid}1", qid, cat, ctype, ok, 1.0 if ok else 0.0))
        rows.append(("open_ended", f"{qid}o", qid, cat, ctype, ok, 1.0 if ok else 0.0))
    df = pd.DataFrame(rows, columns=["task", "item_id", "qid", "category", "ctype", "correct", "score"])
    df["status"], df["judge_ok"], df["setting"], df["variant"] = "ok", True, "32_frames", 0
    df["source_item_id"] = "vid" + df["qid"]
    df["detail"] = [{} for _ in range(len(df))]
    labels = [
        json.dumps({"question_id": q, "category": c, **({"causal_type": t} if t else {})})
        for q, c, t in zip(df["qid"], df["category"], df["ctype"])
    ]
    items = pd.DataFrame({"item_id": df["item_id"], "labels": labels})
    out = {
        (r["metric"], r["slice"]): r["value"]
        for r in score_benchmark(get("maia"), df.drop(columns=["ctype"]), items, Scorer(n_boot=0))
    }
    assert out[("sv_accuracy", "category=causal")] == pytest.approx(0.5)  # the main tables: one column
    for metric in ("sv_accuracy", "oe_accuracy", "pool_consistency", "agg_accuracy"):
        assert out[(metric, "causal_type=explicit")] == pytest.approx(1.0), metric
        assert out[(metric, "causal_type=implicit")] == pytest.approx(0.0), metric
    assert not any(k[1] == "causal_type=None" for k in out)


# -- stub and plausible double answer Italian prompts in Italian ------------------------------
def test_stub_fills_italian_prompts_with_italian_words():
    p_it, p_en = load_prompt(IT / "statement.yaml"), load_prompt(EN / "statement.yaml")
    stub = StubBackend()

    def reply(p):
        msgs = p.render({"question": "Q", "answer": "A"})
        r = asyncio.run(stub.complete("m", msgs, {}, None, p.schema, "seed", language=p.language))
        return json.loads(r.text)["statement"]

    it, en = reply(p_it), reply(p_en)
    assert it.startswith("[stub]") and en.startswith("[stub]")
    assert it != en and guess_language(it.replace("[stub] statement", "il la di")) == "it"
    assert en == reply(p_en)  # deterministic; the English filler is unchanged


def _body(path: Path, variables: dict) -> dict:
    p = load_prompt(path)
    return {
        "model": "m",
        "messages": p.render(variables),
        "response_format": {"type": "json_schema", "json_schema": {"name": p.name, "schema": p.schema}},
    }


def test_plausible_double_writes_italian_questions_that_pass_italian_checks():
    variables = {
        **Q.category_variables("spatial_total", "it"),
        "evidence": "oggetti visti: forno",
        "n_frames": 4,
    }
    body = _body(IT / "questions.yaml", variables)
    good = flawed = 0
    for seed in range(40):
        out = Plausible(seed=seed, p_unparseable=0, p_refusal=0)(body)
        data = out if isinstance(out, dict) else json.loads(out.content)
        probs = Q.question_problems(data["question_a"], lang="it")
        if Q.same_focus(data["question_a"], data["question_b"], 0.5, "it"):
            probs.append("pair_same_focus")
        assert guess_language(data["question_a"]) == "it"
        good += not probs
        # every scripted flaw is one the Italian checks catch (the same kinds as in English)
        flawed += bool(probs) and set(probs) <= {
            "yes_no_question",
            "question_too_short",
            "audio_based_question",
            "pair_same_focus",
        }
    assert good > 0 and flawed > 0 and good + flawed == 40


def test_plausible_double_italian_statement_and_foil():
    body = _body(IT / "statement.yaml", {"question": "Dov'è l'uomo?", "answer": "È vicino all'auto."})
    out = Plausible(seed=1, p_flaw=0, p_unparseable=0, p_refusal=0)(body)
    assert out["statement"].startswith("Nel video, ")
    # a foil swaps one word for an Italian noun, or (flaw) rewords the caption: NLI then says entailment
    cap = "Nel video, l'uomo è vicino all'auto."
    foils = [
        Plausible(seed=s, p_unparseable=0, p_refusal=0)(_body(IT / "foil_spatial_total.yaml", {"caption": cap}))
        for s in range(30)
    ]
    assert {f["foil"] for f in foils} - {cap}
    assert any(f["foil"].startswith("In questo video, ") for f in foils)
    edited = [f["foil"] for f in foils if not f["foil"].startswith("In questo video, ")]
    assert all(F.edit_size(cap, f, "it")[0] == 1 for f in edited)


# -- the chain in Italian: over HTTP against the plausible model, and on the offline stub -------
def _run_chain(store, llm):
    import dagster as dg

    from resources.nli import NLIResource
    from resources.storage import StorageResource

    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", ["b1"])
    chain = [A.maia_questions, A.maia_answer_pools, A.maia_statements, A.maia_foils, A.maia_items]
    res = dg.materialize(
        chain,
        partition_key="b1",
        instance=instance,
        resources={
            "storage": StorageResource(data_dir=str(store.data_dir)),
            "llm": llm,
            "nli": NLIResource(backend="llm"),
        },
        raise_on_error=False,
    )
    assert res.success, [e.event_specific_data.error.message for e in res.all_events if e.is_step_failure]
    items = store.read("maia_items")
    assert len(items) > 0, store.read("rejects")[["stage", "reason"]].value_counts()
    return items


# the paper's foil rounds (3): with 1 round a flawed foil rejects its whole pool too often for one clip
ITALIAN = {"language": "it", "questions": {"categories": ["causal", "spatial_total"]}, "foils": {"max_rounds": 3}}


def test_italian_chain_against_the_plausible_model(corpus, recipe_overrides, llm_double, llm_double_resource):
    recipe_overrides("maia", ITALIAN)
    llm_double.responder = Plausible(seed=5, p_flaw=0.2)
    items = _run_chain(corpus, llm_double_resource())
    qs, st, fo = (corpus.read(t) for t in ("maia_questions", "maia_statements", "maia_foils"))
    # Italian text throughout, judged by Italian rules
    for text in [*qs["question"], *st["statement"], *fo["foil"]]:
        assert guess_language(text) == "it", text
    assert all(not Q.question_problems(q, lang="it") for q in qs["question"])
    # the Italian prompt set was sent (hashes of the it/ files)
    assert set(qs["prompt_hash"].dropna()) == {load_prompt(IT / "questions.yaml").hash}
    # one clip: the first half of the clips → explicit causal questions, labelled on their items
    assert set(qs.loc[qs["category"] == "causal", "causal_type"]) == {"explicit"}
    assert set(qs.loc[qs["category"] != "causal", "causal_type"].dropna()) == set()
    causal_labels = [json.loads(x) for x, c in zip(items["labels"], items["category"]) if c == "causal"]
    assert causal_labels and {d["causal_type"] for d in causal_labels} == {"explicit"}


def test_italian_chain_on_the_offline_stub(corpus, recipe_overrides, tmp_path):
    from resources.llm import LLMResource

    recipe_overrides("maia", ITALIAN)
    items = _run_chain(corpus, LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")))
    assert (items["backend"] == "stub").all()
    qs = corpus.read("maia_questions")
    # placeholders, marked as such, with Italian filler words (the prompts were Italian)
    from forge.llm.stub import FILLERS

    for q in qs["question"]:
        mark, _field, *words = q.split()
        assert mark == "[stub]" and words and set(words) <= set(FILLERS["it"]), q
