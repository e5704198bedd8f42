"""MAIA evaluation requests and reply readings (§4.1 statement verification, §4.2 open-ended VQA),
as the official repository (Caput97/MAIA-Multimodal_AI_Assessment) builds and reads them:
``eval_model.py`` (``PROMPT_MC`` / ``PROMPT_GEN``, frames then text through ``vllm_engine.py``),
``compute_mc_scores.py`` (the A/B reading) and ``compute_llm-as-a-judge.py`` (the judge's inputs).

Each item is asked in its own language: ``task:<task>@<lang>`` (evals.yaml ``prompts:``) serves
items whose text is in ``<lang>``, ``task:<task>`` (the official prompts; MAIA is Italian) the rest.
"""

from __future__ import annotations

import re
from typing import Any

from forge.checks.language import detect
from forge.evals import extract as ex
from forge.evals.requests import RequestContext, letter_options
from forge.items.cells import as_list
from forge.llm.types import LLMRequest

MIN_CONFIDENCE = 0.5  # below this the item's language is unclear: the official prompt
POOL = 8  # the judge always sees R1..R8 (a shorter pool is padded with empty references)

# compute_mc_scores.py: the first capital A or B standing alone as a word, anywhere in the reply
# (case kept, nothing else read); none is "out of range" and counts as wrong.
_AB_WORD = re.compile(r"\b([AB])\b")


def item_language(options: list[str] | None, question: str) -> str | None:
    """The language of the text the model reads (the two statements, or the question)."""
    found = detect(" ".join(str(o) for o in options) if options else str(question or ""))
    return found.language if found.confidence >= MIN_CONFIDENCE else None


def task_prompt(prompts: dict[str, Any], task: str, options: list[str] | None, question: str) -> Any:
    """The prompt of the item's task in the item's language (evals.yaml ``prompts:``)."""
    lang = item_language(options, question)
    return prompts.get(f"task:{task}@{lang}") or prompts[f"task:{task}"]


def build_request(c: RequestContext) -> LLMRequest:
    prompt = task_prompt(c.prompts, c.item["task"], c.options, str(c.item.get("question") or ""))
    if c.item["task"] == "statement_verification":
        # PROMPT_MC: the two statements as "A. …" / "B. …" lines
        return c.request(prompt, {"options": letter_options(c.options, "dot")})
    return c.request(prompt, {"question": c.item["question"]})


def extract_maia_ab(reply: str | None) -> ex.Extraction:
    """The statement label of ``reply`` as compute_mc_scores.py reads it: the first standalone
    capital A or B ("B, ma forse A" → B; "a" or "AB" → none)."""
    m = _AB_WORD.search(str(reply or ""))
    if m is None:
        return ex.Extraction(ok=False, reason="empty" if not str(reply or "").strip() else "no_answer")
    return ex.Extraction(letters=(m.group(1),), ok=True, method="maia_ab")


def parse_reply(er: Any, text: str | None, options: dict[str, Any]) -> ex.Extraction | None:
    """Official readings: statement verification by compute_mc_scores.py's rule (option
    ``maia_marker_extraction``: the project's generic reader, ``extract_choice``); an open
    answer is the whole reply as generated (the judge and the overlap metrics read it as is)."""
    if er.kind == "mcq":
        return None if options.get("maia_marker_extraction") else extract_maia_ab(text)
    if er.kind == "text":
        if text is None or not str(text).strip():
            return ex.Extraction(ok=False, reason="empty")
        return ex.Extraction(ok=True, method="text", text=str(text))
    return None


def judge_variables(row: dict[str, Any], item: dict[str, Any]) -> dict[str, str]:
    """The judge's inputs as compute_llm-as-a-judge.py builds them: the question, the reply as
    generated (an empty one too: the official judge rates every reply) and R1..R8, padded with
    empty references to eight."""
    refs = ([str(r) for r in as_list(item.get("references"))] + [""] * POOL)[:POOL]
    return {
        "question": str(item.get("question") or ""),
        "answer": str(row.get("raw_reply") or ""),
        "references": "\n".join(f"R{k}: {r}" for k, r in enumerate(refs, start=1)),
    }
