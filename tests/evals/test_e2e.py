"""End to end: five benchmarks' items → two models served by the LLM double → leaderboard.

``m-good`` always answers right; ``m-bad`` picks a wrong option (and once replies garbage).
The judge (the ``llm`` resource's model) rates answers containing GOOD high and fails once
(schema-violating reply twice), which must leave that item out of the mean with coverage < 1.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import threading
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest
import yaml
from PIL import Image

from forge.storage import TableStore, open_catalog, refresh_catalog
from resources.embedder import EmbedderResource
from resources.storage import StorageResource
from tests.llm_double import Reply

ROOT = Path(__file__).resolve().parents[2]


def _img(data: Path, name: str) -> str:
    p = data / "media" / "img" / f"{name}.jpg"
    p.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (32, 24), (120, 30, 200)).save(p)
    return str(p.relative_to(data))


def _item(
    bench,
    iid,
    task,
    category,
    question,
    options,
    answer,
    src,
    media,
    labels=None,
    extra=None,
    option_types=None,
    references=None,
):
    return {
        "item_id": iid,
        "benchmark": bench,
        "task": task,
        "category": category,
        "question": question,
        "options": options,
        "option_types": option_types,
        "answer": answer,
        "references": references,
        "media_paths": media,
        "unit_id": f"u_{iid}",
        "source_item_id": src,
        "source": "fixture",
        "channel": None,
        "batch": "fixture-0000",
        "labels": json.dumps(labels or {}),
        "backend": "openai",
        "model": "gen",
        "prompt_hash": "h",
        "extra": json.dumps(extra or {}),
    }


GOLD_TEXT: dict[str, str] = {}  # question marker → gold option text (for the responder)


def build_items(data: Path) -> dict[str, pd.DataFrame]:
    out: dict[str, list] = {b: [] for b in ("iibench", "vimu", "vague", "maia", "hummus")}
    for i in range(6):
        m = [_img(data, f"ii{i}")]
        opts = [f"ii{i} option {k}" for k in range(6)]
        gold = i % 6
        GOLD_TEXT[f"Q-ii{i}"] = opts[gold]
        out["iibench"].append(
            _item(
                "iibench",
                f"ii{i}",
                "mcq",
                ["life", "art"][i % 2],
                f"Q-ii{i} what is implied?",
                opts,
                "ABCDEF"[gold],
                f"img{i}",
                m,
                labels={
                    "domain": ["life", "art"][i % 2],
                    "emotion": "negative",
                    "image_type": "meme",
                    "difficulty": "easy",
                    "rhetoric": ["metaphor"],
                },
                option_types=["correct" if k == gold else "distractor" for k in range(6)],
            )
        )
    letters = "ABCDE"
    for c in range(3):
        m = [_img(data, f"vm{c}_{k}") for k in range(3)]
        src = f"vid{c}"
        oe_prompt = f"Transcript: hi\n\nQ-vmOE{c} What does the video mean?\n\nOutput rules: prose."
        out["vimu"].append(
            _item(
                "vimu",
                f"vm_oe{c}",
                "open_ended",
                "OE",
                f"Q-vmOE{c} What does the video mean?",
                None,
                "It mocks X.",
                src,
                m,
                references=["It mocks X."],
                extra={"reference_points": ["mocks X"], "prompts": {"unguided": oe_prompt, "guided": None}},
            )
        )
        for t, gold in (("EG", "A,C"), ("RM", "B"), ("SV", "D,E")):
            GOLD_TEXT[f"Q-vm{t}{c}"] = gold
            p = f"Q-vm{t}{c}\nOptions:\n" + "\n".join(f"{x}. opt{x}" for x in letters) + "\nOutput rules: letters."
            out["vimu"].append(
                _item(
                    "vimu",
                    f"vm_{t}{c}",
                    "multi_select",
                    t,
                    f"Q-vm{t}{c}",
                    [f"opt{x}" for x in letters],
                    gold,
                    src,
                    m,
                    extra={"prompts": {"unguided": p, "guided": p + "\nDefinitions: ..."}},
                    option_types=["correct" if x in gold else "distractor" for x in letters],
                )
            )
    for i in range(4):
        types = ["FS", "correct", "NE", "SU"]
        opts = [f"vg{i} {t} reading" for t in types]
        GOLD_TEXT[f"Q-vg{i}"] = opts[1]
        out["vague"].append(
            _item(
                "vague",
                f"vg{i}",
                "mcq",
                ["sarcasm", "humour"][i % 2],
                f"Q-vg{i} Utterance: 'nice'",
                opts,
                "B",
                f"frame{i}",
                [_img(data, f"vg{i}")],
                option_types=types,
            )
        )
    for q in range(2):
        m = [_img(data, f"ma{q}_{k}") for k in range(4)]
        for p in range(3):
            opts = (
                [f"ma{q}{p} true statement", f"ma{q}{p} foil statement"]
                if p % 2 == 0
                else [f"ma{q}{p} foil statement", f"ma{q}{p} true statement"]
            )
            GOLD_TEXT[opts[0].split()[0] + "-sv"] = f"ma{q}{p} true statement"
            out["maia"].append(
                _item(
                    "maia",
                    f"ma_sv{q}{p}",
                    "statement_verification",
                    "causal",
                    "Which of the two statements is true for the video?",
                    opts,
                    "A" if p % 2 == 0 else "B",
                    f"mvid{q}",
                    m,
                    labels={"category": "causal", "question_id": f"mq{q}"},
                    option_types=["correct", "foil"] if p % 2 == 0 else ["foil", "correct"],
                )
            )
        out["maia"].append(
            _item(
                "maia",
                f"ma_oe{q}",
                "open_ended",
                "causal",
                f"Q-maOE{q} why does the man run?",
                None,
                "to catch the bus",
                f"mvid{q}",
                m,
                labels={"category": "causal", "question_id": f"mq{q}"},
                references=["to catch the bus", "he is late for the bus"],
            )
        )
    for a in range(2):
        m = [_img(data, f"hu{a}")]
        cap = f"Caption-hu{a}: my boss is a shark"
        base = dict(
            src=f"himg{a}",
            media=m,
            labels={"verdict": "Yes", "boxes": [{"label": "shark", "box_norm_tlhw": [0.1, 0.1, 0.5, 0.5]}]},
            extra={"image_description": "A shark in an office."},
        )

        def hq(task, instr, cap=cap):
            return f"Caption: {cap}\n\n{instr} [task={task}]"

        out["hummus"] += [
            _item(
                "hummus",
                f"hu_cls{a}",
                "classification",
                "Yes",
                hq("classification", "Is metaphor use involved? Answer the question with Yes or No."),
                ["Yes", "No"],
                "A",
                references=["Yes"],
                option_types=["positive", "negative"],
                **base,
            ),
            _item(
                "hummus",
                f"hu_nam{a}",
                "naming",
                "Yes",
                hq("naming", "Which metaphor?"),
                None,
                "BOSS IS SHARK",
                references=["BOSS IS SHARK"],
                **base,
            ),
            _item(
                "hummus",
                f"hu_box{a}",
                "image_box",
                "Yes",
                hq("image_box", "Box?"),
                None,
                "shark: [0.1, 0.1, 0.5, 0.5]",
                references=["shark: [0.1, 0.1, 0.5, 0.5]"],
                **base,
            ),
            _item(
                "hummus",
                f"hu_lab{a}",
                "image_label",
                "Yes",
                hq("image_label", "Label?"),
                None,
                "shark",
                references=["shark"],
                **base,
            ),
            _item(
                "hummus",
                f"hu_cap{a}",
                "caption_highlight",
                "Yes",
                hq("caption_highlight", "Highlight?"),
                None,
                "my boss is a <i>shark</i>",
                references=["my boss is a <i>shark</i>"],
                **base,
            ),
            _item(
                "hummus",
                f"hu_exp{a}",
                "explanation",
                "Yes",
                hq("explanation", "Explain?"),
                None,
                "the boss is compared to a predatory shark",
                references=["the boss is compared to a predatory shark"],
                **base,
            ),
        ]
    return {b: pd.DataFrame(rows) for b, rows in out.items()}


def publish_items(data: Path, bench: str, df: pd.DataFrame, dev: pd.DataFrame | None = None) -> None:
    """Export ``df`` as the test split (and ``dev`` as the dev split) of ``bench``: what the
    evaluation reads is the published export, never the items table."""
    from forge.benchmarks import registry
    from forge.export.write import write_export

    parts = [df.assign(split="test")] + ([dev.assign(split="dev")] if dev is not None else [])
    items = pd.concat(parts, ignore_index=True).assign(group_id=lambda d: d["item_id"])
    write_export(
        exports_dir=data / "exports",
        data_dir=data,
        spec=registry.get(bench),
        items=items,
        provenance=pd.DataFrame(columns=["item_id", "source_item_id", "license", "source"]),
        split_order=["dev", "test"],
        stage_config={},
        card_context=CARD,
        copy_media=True,
    )


CARD = {
    "path_hint": "x",
    "backends": "openai",
    "models": "gen",
    "prompt_hashes": [],
    "recipe_config": "",
    "recipe_config_hash": "",
    "cost": {"cost_usd": 0.0, "calls": 0, "tokens_in": 0, "tokens_out": 0, "cache_hits": 0, "per_item": 0.0},
    "gates": {},
}


def dev_items(data: Path) -> pd.DataFrame:
    """Four II-Bench dev examples for the 1/2/3-shot settings (App. C.2)."""
    rows = [
        _item(
            "iibench",
            f"iidev{i}",
            "mcq",
            "life",
            f"Q-dev{i} what is implied?",
            [f"dev{i} option {k}" for k in range(6)],
            "A",
            f"devimg{i}",
            [_img(data, f"iidev{i}")],
            labels={"domain": "life"},
        )
        for i in range(4)
    ]
    return pd.DataFrame(rows)


def _text(body):
    parts = []
    for m in body["messages"]:
        c = m["content"]
        parts += [c] if isinstance(c, str) else [p.get("text", "") for p in c if p.get("type") == "text"]
    return "\n".join(parts)


def _options(text):
    tail = text[text.rfind("Question:") :] if "Question:" in text else text
    return re.findall(r"^\(?([A-F])(?:[\)\.]|:) (.+)$", tail, re.M)


HUMMUS_GOOD = {
    "classification": "Yes",
    "naming": "BOSS IS SHARK",
    "image_box": "shark: [0.1, 0.1, 0.5, 0.5]",
    "image_label": "shark",
    "caption_highlight": "my boss is a <i>shark</i>",
    "explanation": "the boss is compared to a predatory shark",
}
HUMMUS_BAD = {
    "classification": "No",
    "naming": "TIME IS MONEY",
    "image_box": "desk: [0.7, 0.7, 0.2, 0.2]",
    "image_label": "desk",
    "caption_highlight": "<i>my boss</i> is a shark",
    "explanation": "it is funny",
}


def responder(body):
    text = _text(body)
    model = body["model"]
    good = model == "m-good"
    rf = (body.get("response_format") or {}).get("json_schema", {}).get("name")
    if rf == "eval_vimu_oe_judge":
        if "Q-vmOE2" in text:  # this judge call fails (schema-violating reply, twice: repair fails)
            return Reply.json({"score_total": 12})
        hi = "GOOD" in text.split("Model Prediction:")[-1]
        bd = {
            "core_intent": 5 if hi else 1,
            "implicit_signal": 3 if hi else 0,
            "target_or_social_meaning": 1 if hi else 0,
            "hallucination_penalty": 0 if hi else 2,
            "literal_only_penalty": 0 if hi else 1,
        }
        return {
            "score_total": 9 if hi else -2,
            "score_breakdown": bd,
            "verdict": "excellent" if hi else "wrong",
            "reasoning_short": "j",
        }
    if rf == "eval_maia_oe_judge":
        return {"label": "Correct" if "GOOD" in text.split("Candidate Answer: ")[-1].split("\n")[0] else "Incorrect"}
    if "Describe this image" in text:
        return "A person stands in a room."
    if "Answer the question with A or B." in text:  # Hummus §6.2 prompt (3): options in a seeded order
        pos = re.search(
            r"^([AB])\. The humor of the given image-and-caption combination involves metaphor use\.$", text, re.M
        ).group(1)
        return pos if good else "AB"[pos == "A"]
    m = re.search(r"\[task=(\w+)\]", text)
    if m:
        return (HUMMUS_GOOD if good else HUMMUS_BAD)[m.group(1)]
    if "Q-maOE" in text or "Q-vmOE" in text:
        return "GOOD: he runs to catch the bus" if good else "a man walks"
    m = re.search(r"Q-vm(EG|RM|SV)\d", text)
    if m:
        gold = GOLD_TEXT[m.group(0)]  # the official JSON form; prose "A,B,..." is unreadable (officially 0)
        return json.dumps({"selected_options": gold.split(",")}) if good else "A,B,C,D,E"
    opts = _options(text)
    gold_text = None
    tail = text[text.rfind("Question:") :] if "Question:" in text else text  # the query, not the few-shot examples
    for k, v in GOLD_TEXT.items():
        if k in tail and not k.endswith("-sv"):
            gold_text = v
    for _, t in opts:
        if "true statement" in t:
            gold_text = t.strip()
    if "Q-ii5" in text and not good:
        return "I cannot tell."  # unparseable
    for letter, t in opts:
        if (t.strip() == gold_text) == good:
            return f"Answer: ({letter})"
    return "?"


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """The five benchmarks' items published once for the module (the dataset cards take seconds);
    each test evaluates a copy of its own."""
    data = tmp_path_factory.mktemp("published") / "data"
    for bench, df in build_items(data).items():
        publish_items(data, bench, df, dev_items(data) if bench == "iibench" else None)
    return data


@pytest.fixture
def setup(published, tmp_path, llm_double, llm_double_resource, monkeypatch):
    data = tmp_path / "data"
    shutil.copytree(published, data)
    store = TableStore(data)
    monkeypatch.setenv("DOUBLE_KEY", "sk-double")
    models = tmp_path / "models.yaml"
    spec = {
        "base_url": llm_double.base_url,
        "api_key_env": "DOUBLE_KEY",
        "accepts": "frames",
        "max_frames": 4,
        "params": {"temperature": 0},
    }
    models.write_text(
        yaml.safe_dump(
            {"models": [{"name": "m-good", "model": "m-good", **spec}, {"name": "m-bad", "model": "m-bad", **spec}]}
        )
    )
    cfg = yaml.safe_load((ROOT / "config" / "evals.yaml").read_text())
    cfg["bootstrap"]["n"] = 50
    cfg["circular"] = True
    cfg_path = tmp_path / "evals.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    llm_double.responder = responder
    from assets.evals.assets import build_defs

    defs = build_defs(models, cfg_path)
    resources = {
        "llm": llm_double_resource(max_concurrency=16),
        "storage": StorageResource(data_dir=str(data)),
        "embedder": EmbedderResource(),
    }
    return defs, resources, store, llm_double


def test_two_models_leaderboard(setup):
    defs, resources, store, double = setup
    evals = [a for a in defs.assets if a.key.to_user_string().endswith("_eval")]
    reports = [a for a in defs.assets if a.key.to_user_string().endswith("_report")]
    for model in ("m-good", "m-bad"):
        res = dg.materialize(evals, partition_key=model, resources=resources, selection=evals)
        assert res.success
    res = dg.materialize(reports, resources=resources)
    assert res.success

    preds = store.read("eval_predictions")
    scores = store.read("eval_scores")
    assert set(preds["model"]) == {"m-good", "m-bad"}
    # every setting of every benchmark ran for both models
    assert set(preds.loc[preds.benchmark == "iibench", "setting"]) == {
        "none",
        "1-shot",
        "2-shot",
        "3-shot",
        "cot",
        "domain",
        "emotion",
        "rhetoric",
    }
    assert set(preds.loc[preds.benchmark == "vague", "setting"]) == {
        "LM",
        "SM",
        "VLM",
        "SM+CoT",
        "VLM+CoT",
        "LM-free-form",
        "SM-free-form",
        "VLM-free-form",
    }
    assert set(preds.loc[preds.benchmark == "maia", "setting"]) == {"black_video", "1_frame", "32_frames"}
    # raw replies stored; garbage is unparseable, not guessed
    bad = preds[(preds.model == "m-bad") & (preds.item_id == "ii5") & (preds.variant == 0)]
    assert (bad["status"] == "unparseable").all() and bad["raw_reply"].str.contains("cannot tell").all()

    # leaderboard orders the good model first on every benchmark × setting
    refresh_catalog(store)
    with open_catalog(store) as con:
        lb = con.sql("select * from leaderboard").df()
    assert set(lb["benchmark"]) == {"iibench", "vimu", "vague", "maia", "hummus"}
    # the leaderboard names the export version it measured and the coverage of each score
    assert set(lb["export_version"]) == {"v1"} and lb["coverage"].notna().all()
    assert set(preds["export_version"]) == {"v1"}
    assert not (preds["item_id"].str.startswith("iidev")).any()  # dev examples are never evaluated
    for (_, _), g in lb.groupby(["benchmark", "setting"]):
        top = g.sort_values("rank").iloc[0]
        assert top["model"] == "m-good", g
    good_ii = scores[
        (scores.model == "m-good")
        & (scores.benchmark == "iibench")
        & (scores.metric == "accuracy")
        & (scores.slice == "all")
    ]
    assert (good_ii["value"] == 1.0).all()
    circ = scores[(scores.benchmark == "iibench") & (scores.metric == "circular_accuracy") & (scores.setting == "none")]
    assert circ.set_index("model")["value"].to_dict() == {"m-good": 1.0, "m-bad": 0.0}

    # ViMU judge failure: item left out (score null), OE coverage 2/3, mean over the other two
    oe = preds[(preds.benchmark == "vimu") & (preds.category == "OE") & (preds.model == "m-good")]
    failed = oe[oe.item_id == "vm_oe2"].iloc[0]
    assert failed["judge_ok"] == False and pd.isna(failed["score"])  # noqa: E712
    row = scores[
        (scores.model == "m-good")
        & (scores.benchmark == "vimu")
        & (scores.metric == "OE")
        & (scores.setting == "unguided")
    ].iloc[0]
    assert row["coverage"] == pytest.approx(2 / 3) and row["value"] == pytest.approx(100.0)
    # VAGUE error types counted for the bad model (it always picks a non-correct option)
    errs = scores[
        (scores.model == "m-bad")
        & (scores.benchmark == "vague")
        & (scores.setting == "VLM")
        & scores.metric.str.startswith("errors_")
        & (scores.slice == "all")
    ]
    assert errs["value"].sum() == 4
    # MAIA pool consistency and aggregate accuracy
    ma = scores[(scores.benchmark == "maia") & (scores.setting == "32_frames") & (scores.slice == "all")]
    v = ma.set_index(["model", "metric"])["value"]
    assert v[("m-good", "pool_consistency")] == 1.0 and v[("m-good", "agg_accuracy")] == 1.0
    assert v[("m-bad", "agg_accuracy")] == 0.0
    # Hummus: box match and similarity for the good model
    hu = scores[
        (scores.benchmark == "hummus")
        & (scores.setting == "multimodal")
        & (scores.model == "m-good")
        & (scores.slice == "all")  # not the §6.1 random baseline rows (slice baseline=random)
    ]
    hv = hu.set_index("metric")["value"]
    assert hv["box_match_rate"] == 1.0 and hv["f1_pos"] == 1.0 and hv["naming_similarity"] > 0.99
    # report wrote plots, including the ViMU affinity heatmap and co-occurrence matrices
    reports_dir = store.data_dir / "reports"
    assert (reports_dir / "vimu" / "affinity_RM.png").exists()
    assert (reports_dir / "vimu" / "cooc_RM_gold.png").exists()
    assert (reports_dir / "iibench" / "accuracy_by_domain.png").exists()


def test_models_of_one_run_are_evaluated_at_once(setup):
    """A run over two model partitions: m-good's replies are held 1.5 s each until m-bad's first
    request arrives, and m-bad's requests go out meanwhile (one model after the other, m-bad would
    wait for all of m-good's held rounds); each model keeps its own predictions. Holding stops once
    m-bad has started: later holds would only lengthen the run, not the check."""
    defs, resources, store, double = setup
    hold = 1.5
    bad_started = threading.Event()

    def slow_good(body):
        r = responder(body)
        if body["model"] != "m-good":
            bad_started.set()
            return r
        if bad_started.is_set():
            return r
        if isinstance(r, Reply):
            return dataclasses.replace(r, delay=hold)
        return Reply.text(r, delay=hold) if isinstance(r, str) else Reply.json(r, delay=hold)

    double.responder = slow_good
    iib = [a for a in defs.assets if a.key.to_user_string() == "iibench_eval"]
    res = dg.materialize(
        iib,
        resources=resources,
        selection=iib,
        tags={"dagster/asset_partition_range_start": "m-good", "dagster/asset_partition_range_end": "m-bad"},
    )
    assert res.success
    sent = {
        m: min(q["t"] for q in double.requests if q["path"].endswith("/chat/completions") and q["body"]["model"] == m)
        for m in ("m-good", "m-bad")
    }
    assert abs(sent["m-bad"] - sent["m-good"]) < hold, (
        f"m-bad's first request waited {sent['m-bad'] - sent['m-good']:.2f} s"
    )
    preds = store.read("eval_predictions")
    counts = preds.groupby("model").size()
    assert set(counts.index) == {"m-good", "m-bad"} and counts["m-good"] == counts["m-bad"]
    scores = store.read("eval_scores")
    top = scores[scores["primary"] & (scores["slice"] == "all") & (scores["setting"] == "none")]
    value = dict(zip(top["model"], top["value"]))
    assert value["m-good"] > value["m-bad"]  # each model's replies scored as its own


def test_stub_model_completes_and_is_labelled(tmp_path):
    """The demo's only model: every reply is a placeholder → unparseable, scores flagged stub."""
    from assets.evals.assets import build_defs
    from resources.llm import LLMResource

    data = tmp_path / "data"
    store = TableStore(data)
    items = build_items(data)
    for bench in ("iibench", "vimu"):
        publish_items(data, bench, items[bench], dev_items(data) if bench == "iibench" else None)
    cfg = yaml.safe_load((ROOT / "config" / "evals.yaml").read_text())
    cfg["bootstrap"]["n"] = 20
    (tmp_path / "evals.yaml").write_text(yaml.safe_dump(cfg))
    defs = build_defs(ROOT / "config" / "models.yaml", tmp_path / "evals.yaml")
    sel = [a for a in defs.assets if a.key.to_user_string() in ("iibench_eval", "vimu_eval")]
    res = dg.materialize(
        sel,
        partition_key="stub-offline",
        resources={
            "llm": LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")),
            "storage": StorageResource(data_dir=str(data)),
            "embedder": EmbedderResource(),
        },
    )
    assert res.success
    preds, scores = store.read("eval_predictions"), store.read("eval_scores")
    assert (preds["backend"] == "stub").all() and (scores["backend"] == "stub").all()
    assert (preds.loc[preds.task != "open_ended", "status"] == "unparseable").all()
    sr = scores[(scores.metric == "success_rate") & (scores.slice == "all") & (scores.benchmark == "iibench")]
    assert (sr["value"] == 0.0).all()
    md = res.asset_materializations_for_node("iibench_eval")[0].metadata
    assert "meaningless" in md["stub-offline/warning"].value


def test_empty_test_split_fails_the_not_empty_check(tmp_path):
    """An export without a test split: the evaluation completes, scores nothing, and its
    `eval_not_empty` check fails (warn) naming the export version; no export at all likewise."""
    from assets.evals.assets import build_defs
    from resources.llm import LLMResource

    data = tmp_path / "data"
    items = build_items(data)
    from forge.benchmarks import registry
    from forge.export.write import write_export

    write_export(
        exports_dir=data / "exports",
        data_dir=data,
        spec=registry.get("vague"),
        items=items["vague"].assign(split="dev", group_id=lambda d: d["item_id"]),
        provenance=pd.DataFrame(columns=["item_id", "source_item_id", "license", "source"]),
        split_order=["dev", "test"],
        stage_config={},
        card_context=CARD,
    )
    defs = build_defs(ROOT / "config" / "models.yaml")
    sel = [a for a in defs.assets if a.key.to_user_string() in ("vague_eval", "iibench_eval")]
    res = dg.materialize(
        sel,
        partition_key="stub-offline",
        resources={
            "llm": LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")),
            "storage": StorageResource(data_dir=str(data)),
            "embedder": EmbedderResource(),
        },
    )
    assert res.success
    evs = {
        e.asset_key.to_user_string(): e for e in res.get_asset_check_evaluations() if e.check_name == "eval_not_empty"
    }
    assert not evs["vague_eval"].passed and evs["vague_eval"].metadata["export_version"].value == "v1"
    assert "no items" in str(evs["vague_eval"].metadata["empty_partitions"].value)
    assert not evs["iibench_eval"].passed and evs["iibench_eval"].metadata["export_version"].value == "none"


def _oe_rows(store, bench):
    preds = store.read("eval_predictions")
    return preds[(preds.benchmark == bench) & (preds.task == "open_ended") & (preds.status == "ok")]


def test_a_stub_judge_never_scores(setup, tmp_path):
    """No endpoint for the judge: open-ended answers get judge failures (judge_missing), not the stub's
    random verdicts as scores, and the report says the judge is missing."""
    from resources.llm import LLMResource

    defs, resources, store, double = setup
    resources = dict(resources, llm=LLMResource(backend="stub", cache_path=str(tmp_path / "judge.sqlite")))
    sel = [a for a in defs.assets if a.key.to_user_string() in ("vimu_eval", "maia_eval")]
    assert dg.materialize(sel, partition_key="m-good", resources=resources, selection=sel).success
    oe = _oe_rows(store, "vimu")
    assert len(oe) and not oe["judge_ok"].astype(bool).any() and oe["score"].isna().all()
    assert oe["judge_error"].str.startswith("judge_missing").all() and oe["judge_model"].isna().all()
    assert _oe_rows(store, "maia")["score"].isna().all()
    reports = [a for a in defs.assets if a.key.to_user_string() in ("vimu_eval_report",)]
    res = dg.materialize(reports, resources=resources)
    assert "JUDGE MISSING" in res.asset_materializations_for_node("vimu_eval_report")[0].metadata["judge"].value


def test_a_real_judge_is_never_sent_stub_replies(setup, tmp_path):
    from assets.evals.assets import build_defs

    _, resources, store, double = setup
    models = tmp_path / "stub_models.yaml"
    models.write_text(
        yaml.safe_dump(
            {
                "models": [
                    {"name": "stub-offline", "backend": "stub", "model": "stub", "accepts": "frames", "max_frames": 4}
                ]
            }
        )
    )
    defs = build_defs(models, tmp_path / "evals.yaml")
    sel = [a for a in defs.assets if a.key.to_user_string() == "vimu_eval"]
    double.reset()
    assert dg.materialize(sel, partition_key="stub-offline", resources=resources, selection=sel).success
    judged = [
        b
        for b in double.chat_requests
        if (b.get("response_format") or {}).get("json_schema", {}).get("name", "").endswith("_oe_judge")
    ]
    assert judged == []
    oe = store.read("eval_predictions")
    oe = oe[(oe.task == "open_ended") & oe["judge_error"].notna()]
    assert oe["judge_error"].str.contains("stub").all()


def test_configured_endpoint_model_is_evaluated_by_default(monkeypatch, tmp_path):
    from forge.evals.config import load_models

    for k in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "SUBTEXT_LLM_BACKEND"):
        monkeypatch.delenv(k, raising=False)
    assert [m.name for m in load_models(ROOT / "config" / "models.yaml")] == ["stub-offline"]
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SUBTEXT_LLM_MODEL", "Qwen/Qwen2.5-VL-7B")
    models = {m.name: m for m in load_models(ROOT / "config" / "models.yaml")}
    cm = models["Qwen-Qwen2.5-VL-7B"]
    assert cm.backend == "openai" and cm.model == "Qwen/Qwen2.5-VL-7B" and cm.base_url == "http://127.0.0.1:9/v1"
    off = tmp_path / "m.yaml"
    off.write_text("include_configured_model: false\nmodels: [{name: s, backend: stub, model: stub}]\n")
    assert [m.name for m in load_models(off)] == ["s"]
