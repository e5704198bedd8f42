"""The ViMU assets end to end through the LLM test double, every branch of the refine loop.

One clip per scenario; the scenario is written into the clip's transcript, which every prompt
of the chain carries (annotation → generate → validate → refine), so the scripted responder
knows which branch to play:

* pass     — first pair passes                        → accepted after round 0
* minor    — first pair gets minor (accepted as is); its rhetoric is only "Other" → no RM item
* majorfix — major on v1, pass on v2                   → accepted after round 1 (refine prompt saw feedback)
* forever  — major every time                          → exhausted after K=3 refinement rounds
* reject   — validator rejects                         → discarded
* leak     — v1 names "sarcastic" (caught in code, judge never sees it), v2 clean → accepted round 1
* external — annotation says it needs external context → filtered at annotation
plus a clip without frames (no_frames).
"""

from __future__ import annotations

import json
import re

import dagster as dg
import pandas as pd
import pytest
from PIL import Image

from assets.recipes.vimu.assets import items_prompt_hash, vimu_annotations, vimu_items, vimu_questions
from assets.recipes.vimu.checks import CHECKS
from forge.storage import TableStore
from resources.storage import StorageResource
from tests.llm_double import LLMDouble, Reply, double_resource

SCENARIOS = ["pass", "minor", "majorfix", "forever", "reject", "leak", "external"]
BATCH = "demo-0000"


def seed_upstream(store: TableStore) -> None:
    frames, evidence = [], []
    for s in SCENARIOS + ["noframes"]:
        cid = f"clip_{s}"
        if s != "noframes":
            for i in range(5):
                rel = f"media/frames/{cid}_{i}.jpg"
                (store.data_dir / rel).parent.mkdir(parents=True, exist_ok=True)
                Image.new("RGB", (32, 24), (i * 40, 10, 200)).save(store.data_dir / rel)
                frames.append(
                    {
                        "frame_id": f"{cid}_f{i}",
                        "batch": BATCH,
                        "source": "demo",
                        "item_id": f"vid_{s}",
                        "clip_id": cid,
                        "kind": "clip_frame",
                        "frame_index": i,
                        "timestamp_s": float(i),
                        "path": rel,
                        "width": 32,
                        "height": 24,
                    }
                )
        evidence.append(
            {
                "unit": "clip",
                "unit_id": cid,
                "batch": BATCH,
                "source": "demo",
                "clip_id": cid,
                "frame_ids": [],
                "tags": ["person", "tie"],
                "persons": 1,
                "person_labels": ["person1"],
                "annotated_paths": [],
                "ocr_text": "MONDAY",
                "transcript": f"SCENARIO:{s} I love meetings.",
                "transcript_status": "ok",
                "tag_backend": "yolo",
                "rich_selected": True,
            }
        )
    evidence.append(
        {
            "unit": "frame",
            "unit_id": "x",
            "batch": BATCH,
            "source": "demo",
            "clip_id": "clip_pass",
            "frame_ids": ["x"],
            "tags": [],
            "persons": 0,
            "person_labels": [],
            "annotated_paths": [],
            "ocr_text": None,
            "transcript": None,
            "transcript_status": "ok",
            "tag_backend": "yolo",
            "rich_selected": False,
        }
    )
    store.write("frames", pd.DataFrame(frames), BATCH)
    store.write("evidence", pd.DataFrame(evidence), BATCH)
    store.write(
        "clips",
        pd.DataFrame(
            [
                {"clip_id": f"clip_{s}", "batch": BATCH, "item_id": f"vid_{s}", "start_s": 0.0, "end_s": 12.5}
                for s in SCENARIOS
            ]
        ),
        BATCH,
    )
    store.write(
        "videos",
        pd.DataFrame([{"item_id": f"vid_{s}", "batch": BATCH, "channel": f"chan_{s}"} for s in SCENARIOS]),
        BATCH,
    )


def annotation_reply(s: str) -> dict:
    return {
        "literal_content": "A man in a tie says he loves meetings.",
        "intended_meaning": "Office meetings are a waste of time; the praise is the opposite of what he means.",
        "rhetoric_mechanisms": ["Other"] if s == "minor" else ["Sarcasm", "Literal Only", "Exaggeration"],
        "social_value_signals": ["Fatalism or Cynicism", "Contempt"],
        "evidence": [{"source": "Vocal tone", "cue": "flat delivery"}, {"source": "On-screen text", "cue": "MONDAY"}],
        "target_subjects": [{"target": "corporate culture", "kind": "institution_or_organization"}],
        "requires_external_context": s == "external",
        "ambiguous": False,
    }


class Script:
    def __init__(self):
        self.generations: dict[str, int] = {}
        self.judged: list[str] = []

    def __call__(self, body):
        name = body["response_format"]["json_schema"]["name"]
        text = "\n".join(
            m["content"] if isinstance(m["content"], str) else " ".join(p.get("text", "") for p in m["content"])
            for m in body["messages"]
        )
        s = re.search(r"SCENARIO:(\w+)", text).group(1)
        if name == "vimu_annotate":
            return Reply.json(annotation_reply(s))
        if name in ("vimu_generate_qa", "vimu_refine_qa"):
            n = self.generations[s] = self.generations.get(s, 0) + 1
            q = (
                f"Why is the man so sarcastic in take v{n}?"
                if (s == "leak" and n == 1)
                else f"What is the creator really getting at in take v{n}?"
            )
            return Reply.json(
                {
                    "question": q,
                    "answer": "Meetings waste everyone's time.",
                    "reference_points": ["meetings are useless", "the praise is insincere"],
                }
            )
        if name == "vimu_validate_qa":
            v = int(re.search(r"Question: .*take v(\d+)", text).group(1))
            self.judged.append(f"{s}:v{v}")
            verdict = {
                "pass": "pass",
                "minor": "minor",
                "reject": "reject",
                "forever": "major",
                "majorfix": "major" if v == 1 else "pass",
                "leak": "pass",
            }[s]
            return Reply.json(
                {
                    "verdict": verdict,
                    "hint_free": True,
                    "requires_inference": True,
                    "aligned": True,
                    "answerable": True,
                    "feedback": f"judge feedback {s} v{v}",
                }
            )
        raise AssertionError(name)


@pytest.fixture(scope="module")
def llm_double_module():
    with LLMDouble() as double:
        yield double


@pytest.fixture(scope="module")
def built(tmp_path_factory, llm_double_module):
    """Built once for the module (three materializations through the double)."""
    tmp_path, llm_double = tmp_path_factory.mktemp("vimu"), llm_double_module
    store = TableStore(tmp_path / "data")
    seed_upstream(store)
    script = Script()
    llm_double.responder = script
    instance = dg.DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("batches", [BATCH])
    llm = double_resource(llm_double, cache_path=str(tmp_path / "llm_cache.sqlite"))
    resources = {"storage": StorageResource(data_dir=str(store.data_dir)), "llm": llm}
    results = []
    for asset in (vimu_annotations, vimu_questions, vimu_items):
        res = dg.materialize(
            [asset, *CHECKS], partition_key=BATCH, instance=instance, resources=resources, selection=[asset.key]
        )
        assert res.success
        results.append(res)
    return store, script, results, llm_double


def test_annotations_validated_and_filtered(built):
    store, _, _, _ = built
    ann = store.read("vimu_annotations").set_index("clip_id")
    assert set(ann.index) == {f"clip_{s}" for s in SCENARIOS if s != "external"}
    row = ann.loc["clip_pass"]
    assert list(row["rhetoric_mechanisms"]) == ["Sarcasm", "Exaggeration"]  # Literal Only dropped
    assert "Literal Only" in row["label_notes"]
    assert list(row["rhetoric_macros"]) == ["C", "D"] and list(row["social_value_macros"]) == ["B", "C"]
    assert list(row["evidence_macros"]) == ["B", "E"]
    assert len(row["media_paths"]) == 5 and row["channel"] == "chan_pass" and row["backend"] == "openai"
    rej = store.read("rejects", parts=[f"vimu_annotations__{BATCH}"]).set_index("item_id")["reason"].to_dict()
    assert rej == {"clip_external": "requires_external_context", "clip_noframes": "no_frames"}


def test_refine_loop_branches(built):
    store, script, results, double = built
    q = store.read("vimu_questions").set_index("clip_id")
    assert set(q.index) == {"clip_pass", "clip_minor", "clip_majorfix", "clip_leak"}
    assert q.loc["clip_pass", "rounds"] == 0 and q.loc["clip_pass", "final_verdict"] == "pass"
    assert q.loc["clip_minor", "final_verdict"] == "minor"
    assert q.loc["clip_majorfix", "rounds"] == 1 and "take v2" in q.loc["clip_majorfix", "question"]
    assert q.loc["clip_majorfix", "prompt_name"] == "vimu_refine_qa"
    assert q.loc["clip_leak", "rounds"] == 1 and "sarcastic" not in q.loc["clip_leak", "question"]
    assert script.generations["forever"] == 4  # round 0 + K = 3 refinements
    assert "leak:v1" not in script.judged and "leak:v2" in script.judged
    # the refinement saw the judge's feedback / the code check's feedback
    refine_bodies = [
        json.dumps(b) for b in double.chat_requests if b["response_format"]["json_schema"]["name"] == "vimu_refine_qa"
    ]
    assert any("judge feedback majorfix v1" in b for b in refine_bodies)
    assert any("not hint-free" in b and "SCENARIO:leak" in b for b in refine_bodies)
    rej = store.read("rejects", parts=[f"vimu_questions__{BATCH}"]).set_index("item_id")["reason"].to_dict()
    assert rej == {"clip_forever": "refine_max_rounds", "clip_reject": "refine_verdict_reject"}
    att = store.read("llm_attempts", parts=[f"vimu_questions__{BATCH}"])
    assert len(att[(att.item_id == "clip_forever") & (att.step == "judge")]) == 4
    leak0 = att[(att.item_id == "clip_leak") & (att["round"] == 0)]
    assert set(leak0.step) == {"generate", "check:hint_leak"} and set(leak0.verdict.dropna()) == {"major"}
    checks = {e.check_name: e for e in results[1].get_asset_check_evaluations()}
    md = checks["refine_outcomes"].metadata
    assert md["accepted_round_0"].value == 2 and md["accepted_round_1"].value == 2
    assert md["exhausted"].value == 1 and md["rejected"].value == 1 and md["hint_leaks_caught"].value == 1
    assert md["accepted_round_0_rate"].value == pytest.approx(2 / 6, abs=1e-3)
    assert checks["contract_vimu_questions"].passed


def test_items_built_with_gold_and_provenance(built):
    store, _, results, _ = built
    items = store.read("vimu_items")
    assert items.groupby("unit_id")["category"].apply(lambda c: "".join(sorted(c))).to_dict() == {
        "clip_pass": "EGOERMSV",
        "clip_majorfix": "EGOERMSV",
        "clip_leak": "EGOERMSV",
        "clip_minor": "EGOESV",
    }
    rm = items[(items.unit_id == "clip_pass") & (items.category == "RM")].iloc[0]
    assert rm["answer"] == "C,D" and rm["task"] == "multi_select" and rm["source_item_id"] == "vid_pass"
    assert set(items["prompt_hash"]) == {items_prompt_hash()} and set(items["backend"]) == {"openai"}
    rej = store.read("rejects", parts=[f"vimu_items__{BATCH}"])
    assert list(rej["reason"]) == ["rm_no_macro"]
    assert all(e.passed for e in results[2].get_asset_check_evaluations())


def test_standalone_checks_pass_and_detect(built):  # runs last: it edits the questions table
    store, _, _, _ = built
    from assets.recipes.vimu.checks import hint_free_questions, items_consistent, items_prompt_current

    storage = StorageResource(data_dir=str(store.data_dir))
    assert hint_free_questions(storage=storage).passed
    assert items_consistent(storage=storage).passed
    assert items_prompt_current(storage=storage).passed
    # a leaking question slipped into the table (e.g. the taxonomy grew) is caught
    q = store.read("vimu_questions")
    q.loc[0, "question"] = "What makes this so ironic?"
    store.write("vimu_questions", q, BATCH)
    res = hint_free_questions(storage=storage)
    assert not res.passed and res.metadata["leaking_questions"].value == 1
    assert res.metadata["leaks_caught_in_loop"].value == 1
