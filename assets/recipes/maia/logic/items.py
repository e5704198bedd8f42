"""Benchmark items (§4): statement-verification pairs (true vs foil, A/B by a seeded shuffle)
and open-ended questions with their pool of references, in the common item columns."""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from forge.checks.mcq import shuffle_options
from forge.items.fields import COMMON_COLUMNS

from .questions import stable_id
from .taxonomy import CAUSAL

SV_QUESTION = "Which of the two statements is true for the video?"
# the item's own question in the benchmark's language (the evaluation prompt carries the instruction)
SV_QUESTIONS = {"en": SV_QUESTION, "it": "Quale delle due affermazioni è vera per il video?"}
# the common item columns (forge/items); `lineage` is added when the table is written (assets/common.py)
ITEM_COLUMNS = [c for c in COMMON_COLUMNS if c != "lineage"] + ["extra"]


def _backend(*values: Any) -> str:
    """``stub`` as soon as any part came from the stub; ``human`` only when every part was imported."""
    if any(v == "stub" for v in values):
        return "stub"
    return "openai" if any(v == "openai" for v in values) else "human"


def aligned_pools(answers: pd.DataFrame, statements: pd.DataFrame, foils: pd.DataFrame) -> dict[str, int]:
    """Question id → complete answer/statement/foil triples, for pools whose members nest (foil
    indices ⊆ statement indices ⊆ answer indices). A member with no text leaves a gap the items
    report; stages out of step (a foil of a statement that is gone, after a re-run of one stage)
    leave the pool out until they agree."""

    def members(df: pd.DataFrame, col: str) -> dict[str, frozenset[str]]:
        if not len(df):
            return {}
        return {str(q): frozenset(str(v).rsplit("_", 1)[-1][1:] for v in g[col]) for q, g in df.groupby("question_id")}

    a, s, f = members(answers, "answer_id"), members(statements, "statement_id"), members(foils, "foil_id")
    empty: frozenset[str] = frozenset()
    return {q: len(f.get(q, empty)) for q, idx in a.items() if idx and f.get(q, empty) <= s.get(q, empty) <= idx}


def _reviews(*frames: pd.DataFrame) -> dict[str, list[str]]:
    """Question id → the review notes of its members (answers, statements, foils), deduplicated."""
    out: dict[str, list[str]] = {}
    for df in frames:
        if not len(df) or "review" not in df.columns:
            continue
        for q, note in zip(df["question_id"], df["review"]):
            if isinstance(note, str) and note and note not in out.setdefault(str(q), []):
                out[str(q)].append(note)
    return out


def _member_reviews(answers: pd.DataFrame, statements: pd.DataFrame, foils: pd.DataFrame) -> dict[str, dict[str, str]]:
    """Question id → member label (``answer 3``, ``statement 3``, ``foil 3``; 1-based pool index) →
    that member's own review note: the review task shows each flag on the member it concerns."""
    out: dict[str, dict[str, str]] = {}
    for kind, df, col in (
        ("answer", answers, "answer_id"),
        ("statement", statements, "statement_id"),
        ("foil", foils, "foil_id"),
    ):
        if not len(df) or "review" not in df.columns:
            continue
        for r in df.to_dict("records"):
            note = r.get("review")
            if isinstance(note, str) and note:
                idx = r.get("idx")
                idx = (
                    int(idx) if isinstance(idx, int | float) and idx == idx else int(str(r[col]).rsplit("_", 1)[-1][1:])
                )
                out.setdefault(str(r["question_id"]), {})[f"{kind} {idx + 1}"] = note
    return out


def _causal(q: dict[str, Any]) -> dict[str, str]:
    """``causal_type`` label of a causal question (explicit / implicit; Tables 10 and 13 report them apart)."""
    t = q.get("causal_type")
    return {"causal_type": str(t)} if q.get("category") == CAUSAL and isinstance(t, str) and t else {}


def build_items(
    questions: pd.DataFrame,
    answers: pd.DataFrame,
    statements: pd.DataFrame,
    foils: pd.DataFrame,
    clip_info: dict[str, dict[str, Any]],
    seed: str = "maia",
    pool_size: int = 8,
    lang: str = "en",
) -> pd.DataFrame:
    """One ``statement_verification`` item per foil and one ``open_ended`` item per question, for
    questions whose answers, statements and foils agree on their pool indices. Every item of a pool
    with a member flagged for review, or short of ``pool_size``, says so in ``extra.review`` (the
    paper fixed those by hand, App. A.4/A.8: a user filters or reviews them, nothing is dropped)."""
    rows: list[dict[str, Any]] = []
    sizes = aligned_pools(answers, statements, foils)
    reviews = _reviews(answers, statements, foils)
    by_member = _member_reviews(answers, statements, foils)
    for q, n in sizes.items():
        if n < pool_size:
            reviews.setdefault(q, []).insert(0, f"pool_short: {n}/{pool_size} members")
    questions = questions[questions["question_id"].isin(sizes)] if len(questions) else questions
    q_by_id = {r["question_id"]: r for r in questions.to_dict("records")} if len(questions) else {}
    st_by_id = {r["statement_id"]: r for r in statements.to_dict("records")} if len(statements) else {}
    for f in foils.to_dict("records"):
        st, q = st_by_id.get(f["statement_id"]), q_by_id.get(f["question_id"])
        if st is None or q is None:
            continue
        info = clip_info.get(q["clip_id"], {})
        iid = f"maia_sv_{stable_id(f['foil_id'])}"
        mcq = shuffle_options([st["statement"], f["foil"]], ["correct", "foil"], seed=(seed, iid))
        rows.append(
            {
                "item_id": iid,
                "benchmark": "maia",
                "task": "statement_verification",
                "category": q["category"],
                "question": SV_QUESTIONS.get(lang, SV_QUESTION),
                "options": mcq.options,
                "option_types": mcq.option_types,
                "answer": mcq.answer,
                "references": None,
                "media_paths": list(info.get("media_paths", [])),
                "unit_id": q["clip_id"],
                "source_item_id": info.get("item_id"),
                "source": info.get("source"),
                "channel": info.get("channel"),
                "batch": q["batch"],
                "labels": json.dumps(
                    {
                        "category": q["category"],
                        "macro_category": q["macro_category"],
                        "question_id": q["question_id"],
                        "pool_index": int(st["idx"]),
                        **_causal(q),
                    }
                ),
                "backend": _backend(q["backend"], st["backend"], f["backend"]),
                "model": f["model"],
                "prompt_hash": f["prompt_hash"],
                "extra": json.dumps(
                    {
                        "maia_question": q["question"],
                        "statement_id": st["statement_id"],
                        "foil_id": f["foil_id"],
                        "edit_distance": int(f["edit_distance"]),
                        "nli_label": f["nli_label"],
                        "origin": q["origin"],
                        "review": reviews.get(q["question_id"]) or None,
                        "review_members": {
                            k: v
                            for k, v in by_member.get(q["question_id"], {}).items()
                            if k in (f"statement {int(st['idx']) + 1}", f"foil {int(st['idx']) + 1}")
                        }
                        or None,
                    }
                ),
            }
        )
    if len(answers):
        for qid, grp in answers.sort_values("idx").groupby("question_id", sort=True):
            q = q_by_id.get(qid)
            if q is None:
                continue
            info = clip_info.get(q["clip_id"], {})
            refs = [str(a) for a in grp["answer"]]
            rows.append(
                {
                    "item_id": f"maia_oe_{stable_id(qid)}",
                    "benchmark": "maia",
                    "task": "open_ended",
                    "category": q["category"],
                    "question": q["question"],
                    "options": None,
                    "option_types": None,
                    "answer": refs[0],
                    "references": refs,
                    "media_paths": list(info.get("media_paths", [])),
                    "unit_id": q["clip_id"],
                    "source_item_id": info.get("item_id"),
                    "source": info.get("source"),
                    "channel": info.get("channel"),
                    "batch": q["batch"],
                    "labels": json.dumps(
                        {
                            "category": q["category"],
                            "macro_category": q["macro_category"],
                            "question_id": qid,
                            **_causal(q),
                        }
                    ),
                    "backend": _backend(q["backend"], *grp["backend"]),
                    "model": str(grp["model"].iloc[0]),
                    "prompt_hash": str(grp["prompt_hash"].iloc[0]),
                    "extra": json.dumps(
                        {
                            "origin": q["origin"],
                            "n_references": len(refs),
                            "review": reviews.get(qid) or None,
                            "review_members": {
                                k: v for k, v in by_member.get(str(qid), {}).items() if k.startswith("answer ")
                            }
                            or None,
                        }
                    ),
                }
            )
    return pd.DataFrame(rows, columns=ITEM_COLUMNS)
