"""Gated items of MAIA and Hummus in the shape the gates write them (``gated_items``), with
their images, for the review tests."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from PIL import Image

from forge.storage import TableStore
from forge.storage.contracts import load_contract


def image(data: Path, name: str, color: tuple[int, int, int], size: tuple[int, int] = (96, 64)) -> str:
    rel = f"media/images/{name}.png"
    (data / rel).parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, color).save(data / rel)
    return rel


def base(item_id: str, benchmark: str, media: str, **kw) -> dict:
    return {
        "item_id": item_id,
        "benchmark": benchmark,
        "task": "statement_verification",
        "category": "implicit_causal",
        "question": f"Which statement about clip {item_id} is true?",
        "options": [f"The person in {item_id} is leaving because it rains.", f"The person in {item_id} is dancing."],
        "option_types": ["correct", "foil_action"],
        "answer": "A",
        "references": None,
        "media_paths": [media],
        "unit_id": f"clip_{item_id}",
        "source_item_id": f"vid_{item_id}",
        "source": "demo",
        "channel": None,
        "batch": "demo-0000",
        "labels": json.dumps({"question_id": f"q_{item_id}"}),
        "backend": "openai",
        "model": "gpt-test",
        "prompt_hash": "p1",
        "extra": json.dumps({"profile": "paper"}),
        "split": "test",
        "group_id": f"g_{item_id}",
        "reshuffled": False,
        "blind_trials": None,
        "blind_correct": None,
        "blind_p_value": None,
        "lineage": None,
        **kw,
    }


def write_gated(store: TableStore, name: str, rows: list[dict]) -> pd.DataFrame:
    c = load_contract("gated_items")
    df = c.conform(pd.DataFrame(rows))
    store.write("gated_items", df, name, schema=c.arrow_schema())
    return df


def maia(store: TableStore, n: int = 4) -> pd.DataFrame:
    rows = []
    for i in range(1, n + 1):
        media = image(store.data_dir, f"maia_{i}", (40 * i, 80, 120))
        cat = "implicit_causal" if i % 2 else "spatial"
        rows.append(base(f"m{i}", "maia", media, category=cat))
    return write_gated(store, "maia", rows)


def hummus_box(item_id: str, media: str, tlhw: list[float], label: str) -> dict:
    box = {"label": label, "box_norm_tlhw": tlhw, "box_px_xyxy": [0, 0, 1, 1]}
    answer = f"{label}: [" + ", ".join(f"{v:.3f}" for v in tlhw) + "]"
    return base(
        item_id,
        "hummus",
        media,
        task="image_box",
        category="Yes",
        question="Caption: the meeting could have been an email\n\nMark the metaphor-related region.",
        options=None,
        option_types=None,
        answer=answer,
        references=[answer],
        labels=json.dumps({"verdict": "Yes", "metaphors": ["MEETING IS PRISON"], "boxes": [box]}),
    )


def hummus(store: TableStore) -> pd.DataFrame:
    a = image(store.data_dir, "hummus_a", (200, 180, 20))
    b = image(store.data_dir, "hummus_b", (20, 180, 200))
    rows = [hummus_box("h1", a, [0.1, 0.2, 0.3, 0.4], "chains"), hummus_box("h2", b, [0.5, 0.5, 0.2, 0.2], "bars")]
    return write_gated(store, "hummus", rows)


def vague(store: TableStore, n: int = 3) -> pd.DataFrame:
    rows = []
    for i in range(1, n + 1):
        media = image(store.data_dir, f"vague_{i}", (90, 30 * i, 60))
        rows.append(
            base(
                f"v{i}",
                "vague",
                media,
                task="mcq",
                category="sarcasm",
                question=f"Great, another puddle on floor {i}. What does the speaker want?",
                options=[f"Mop the floor {i}", "Open the window", "Sing a song", "Buy a hat"],
                option_types=["correct", "FS", "SU", "NE"],
                labels=json.dumps({"strategy": "sarcasm", "subject": "person1", "action": "mop", "object": "floor"}),
            )
        )
    return write_gated(store, "vague", rows)


def maia_pool(store: TableStore, qid: str = "q1", pairs: int = 8, flags: dict[str, str] | None = None) -> list[dict]:
    """One MAIA pool as the recipe builds it: the open question with its 8 answers (references) and
    8 statement pairs, every item with ``labels.question_id`` and ``extra.review`` /
    ``extra.review_members`` (``flags``: member label → note, e.g. ``{"answer 3": "inconsistent_answer: ..."}``)."""
    media = image(store.data_dir, f"maia_{qid}", (30, 90, 150))
    flags = flags or {}
    notes = sorted(set(flags.values())) or None
    answers = [f"Pool {qid}: the cook leaves because the oven number {i + 1} is too hot." for i in range(pairs)]
    rows = []
    for i in range(pairs):
        own = {k: v for k, v in flags.items() if k in (f"statement {i + 1}", f"foil {i + 1}")}
        rows.append(
            base(
                f"{qid}_sv{i + 1}",
                "maia",
                media,
                question="Which of the two statements is true for the video?",
                options=[
                    f"The cook in {qid} opens oven number {i + 1}.",
                    f"The cook in {qid} closes oven number {i + 1}.",
                ],
                option_types=["correct", "foil"],
                unit_id=f"clip_{qid}",
                labels=json.dumps({"question_id": qid, "pool_index": i, "category": "implicit_causal"}),
                extra=json.dumps(
                    {
                        "profile": "paper",
                        "maia_question": f"Why does the cook in {qid} leave?",
                        "review": notes,
                        "review_members": own or None,
                    }
                ),
            )
        )
    own = {k: v for k, v in flags.items() if k.startswith("answer ")}
    rows.append(
        base(
            f"{qid}_oe",
            "maia",
            media,
            task="open_ended",
            question=f"Why does the cook in {qid} leave?",
            options=None,
            option_types=None,
            answer=answers[0],
            references=answers,
            unit_id=f"clip_{qid}",
            labels=json.dumps({"question_id": qid, "category": "implicit_causal"}),
            extra=json.dumps({"profile": "paper", "review": notes, "review_members": own or None}),
        )
    )
    return rows
