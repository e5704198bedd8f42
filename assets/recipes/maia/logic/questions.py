"""Questions: generation requests per (clip, category), the programmatic checks of App. A.3
(open-ended, no audio, the second question about other entities/events), and the import of
human-written questions and answers (MAIA's were human)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from forge.checks.language import wrong_language
from forge.checks.text import check_language, content_tokens, lexical_overlap, tokens
from forge.provenance.versioning import sha256_bytes

from .taxonomy import CAUSAL, CAUSAL_TYPES, categories, category

# A question opening with an auxiliary or modal verb asks for yes/no ("Is there a car?").
_YES_NO_OPENERS = frozenset(
    "is are was were am do does did can could will would shall should may might must has have had "
    "isn't aren't wasn't weren't don't doesn't didn't can't cannot couldn't won't wouldn't shouldn't hasn't "
    "haven't hadn't".split()
)
_AUDIO_WORDS = frozenset(
    "hear hears heard hearing sound sounds audio listen listens listening voice voices say says said saying "
    "song songs music musical sing sings sang singing shout shouts shouted speech speaks spoke noise noises "
    "lyrics narrator".split()
)


def stable_id(*parts: object, n: int = 12) -> str:
    return sha256_bytes("\x1f".join(str(p) for p in parts).encode())[:n]


def question_id(clip_id: str, category: str, slot: str) -> str:
    return f"q_{stable_id(clip_id, category, slot)}"


SLOTS = ("a", "b")  # §3 / Fig. 2: question A and question B in every category of every clip


def grid_gaps(rows: Sequence[dict[str, Any]], cells: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """The (clip, category) cells of the generated grid still short of A and B: each with what it has."""
    have: dict[tuple[str, str], set[str]] = {}
    for r in rows:
        have.setdefault((r["clip_id"], r["category"]), set()).add(r["slot"])
    out = []
    for clip, cat in cells:
        got = sorted(have.get((clip, cat), set()) & set(SLOTS))
        if len(got) < len(SLOTS):
            out.append({"clip_id": clip, "category": cat, "slots": got, "missing": len(SLOTS) - len(got)})
    return out


# Italian has no auxiliary inversion: a polar question is a statement with a question mark ("C'è
# una macchina nel video?"). An open question carries an interrogative word (App. A.3, Fig. 7:
# "Perché ...", "Dov'è ...", "Quand'è che ...", "In quanto tempo ...", "Che cosa ...").
_IT_INTERROGATIVES = frozenset(
    "chi che cosa cos' come com' dove dov' quando quand' perché perchè quanto quanta quanti quante "
    "quale quali qual".split()
)
_IT_AUDIO_WORDS = frozenset(
    "sentire sente sentono senti sentito sentita suono suoni sonoro audio ascoltare ascolta ascoltano "
    "ascoltato voce voci dice dicono detto dicendo pronuncia canzone canzoni musica musicale cantare canta "
    "cantano cantando cantato grida gridano urla urlano rumore rumori parla parlano parlando parole testo "
    "narratore".split()
)


def is_yes_no(question: str, lang: str = "en") -> bool:
    """Yes/no (polar) question. English: opens with an auxiliary/modal and offers no alternative
    ("... or ..."). Italian: no interrogative word at all ("Il cane corre?", "C'è una torta?"), or
    only "che" after "è vero" ("È vero che piove?"), and no alternative ("... o ...")."""
    toks = tokens(question, lang)
    if not toks:
        return False
    if check_language(lang) == "it":
        if " o " in f" {' '.join(toks)} ":
            return False
        asks = [i for i, t in enumerate(toks) if t in _IT_INTERROGATIVES]
        return not [i for i in asks if not (toks[i] == "che" and i > 0 and toks[i - 1] == "vero")]
    return toks[0] in _YES_NO_OPENERS and " or " not in f" {' '.join(toks)} "


def mentions_audio(question: str, lang: str = "en") -> bool:
    words = _IT_AUDIO_WORDS if check_language(lang) == "it" else _AUDIO_WORDS
    return any(t in words for t in tokens(question, lang))


def question_problems(question: str, min_tokens: int = 3, lang: str = "en") -> list[str]:
    """Reason codes for a single question (empty = fine), in ``lang``. A question in another
    language is ``wrong_language`` and nothing else: the form rules below are ``lang``'s."""
    if wrong_language(question, lang) is not None:
        return ["wrong_language"]
    out = []
    if len(tokens(question, lang)) < min_tokens:
        out.append("question_too_short")
    if is_yes_no(question, lang):
        out.append("yes_no_question")
    if mentions_audio(question, lang):
        out.append("audio_based_question")
    return out


def pair_overlap(q_a: str, q_b: str, lang: str = "en") -> float:
    """Content-word overlap of the two questions of a pair (low = other entities/events)."""
    return lexical_overlap(q_a, q_b, content_only=True, lang=lang)


def same_focus(q_a: str, q_b: str, max_overlap: float, lang: str = "en") -> bool:
    """The second question repeats the first one's entities/events (App. A.3: it should change them)."""
    if not content_tokens(q_a, lang) or not content_tokens(q_b, lang):
        return False
    return pair_overlap(q_a, q_b, lang) > max_overlap


def evidence_text(ev: dict[str, Any] | None, max_tags: int = 25) -> str:
    """What the model reads next to the frames. The transcript is left out on purpose:
    MAIA questions must be answerable without audio."""
    if not ev:
        return "(no extra evidence)"
    parts = []
    tags = list(ev.get("tags") if ev.get("tags") is not None else [])[:max_tags]
    if tags:
        parts.append("objects seen: " + ", ".join(map(str, tags)))
    if ev.get("persons") is not None:
        parts.append(f"people visible (max in one frame): {int(ev['persons'])}")
    if ev.get("ocr_text"):
        parts.append("on-screen text: " + str(ev["ocr_text"])[:300])
    return "; ".join(parts) or "(no extra evidence)"


def uniform_subsample(items: Sequence[Any], k: int) -> list[Any]:
    """``k`` items spread evenly over ``items`` (all of them when there are fewer)."""
    n = len(items)
    if k <= 0 or n <= k:
        return list(items)
    return [items[round(i * (n - 1) / (k - 1))] if k > 1 else items[n // 2] for i in range(k)]


def category_variables(category_name: str, lang: str = "en", causal_type: str | None = None) -> dict[str, str]:
    """The question prompt's category texts in ``lang`` (a causal type's own definition and example)."""
    c = category(category_name, lang, causal_type)
    ex = c.example
    return {
        "category": c.label,
        "definition": c.definition,
        "example": f"Video: {ex['setting']}. Q: {ex['question']} A: {ex['answer']}",
    }


def causal_types(clip_ids: Sequence[str]) -> dict[str, str]:
    """Causal type per clip (App. A.3 fn. 11: the annotator wrote explicit causal questions for the
    first half of the videos and implicit ones for the second half, so the two are balanced):
    the clips in order, the first half (the middle one too, on an odd count) explicit."""
    ordered = sorted(clip_ids)
    half = (len(ordered) + 1) // 2
    return {c: CAUSAL_TYPES[0] if i < half else CAUSAL_TYPES[1] for i, c in enumerate(ordered)}


# -- import ------------------------------------------------------------------------------


@dataclass
class ImportedQuestion:
    clip_id: str
    category: str
    slot: str
    question: str
    answers: list[str]
    causal_type: str | None = None  # causal questions: explicit / implicit when the file says


def _causal_split(cat: str, raw_type: Any) -> tuple[str, str | None]:
    """``explicit_causal`` / ``causale_implicito`` ... → (causal, type); a ``causal_type`` column wins."""
    typ = str(raw_type or "").strip().lower()
    typ = {"esplicito": "explicit", "esplicita": "explicit", "implicito": "implicit", "implicita": "implicit"}.get(
        typ, typ
    )
    parts = set(cat.split("_"))
    if parts & {"causal", "causale"}:
        found = [
            t
            for t, words in (
                ("explicit", {"explicit", "esplicito", "esplicita"}),
                ("implicit", {"implicit", "implicito", "implicita"}),
            )
            if parts & words
        ]
        return CAUSAL, typ if typ in CAUSAL_TYPES else (found[0] if found else None)
    return cat, None


def _norm_category(raw: str) -> str:
    s = re.sub(r"[\s\-]+", "_", str(raw).strip().lower())
    aliases = {
        "partial_implicit": "implicit_partial",
        "total_implicit": "implicit_total",
        "partial_spatial": "spatial_partial",
        "total_spatial": "spatial_total",
        "duration": "temporal_duration",
        "duration_temporal": "temporal_duration",
        "partial_temporal": "temporal_partial",
        "out_of_scope": "out_of_scope",
        "outofscope": "out_of_scope",
    }
    return aliases.get(s, s)


def load_import(path: str | Path) -> tuple[list[ImportedQuestion], list[tuple[str, str]]]:
    """Read human-written questions (+ answers) from CSV or JSONL.

    JSONL: one object per question ``{clip_id, category, question, slot?, answers?: [..]}``.
    CSV: ``clip_id, category, question[, slot][, answer]`` — one row per answer (rows of the
    same question are grouped) or ``answer_1..answer_8`` columns. Returns the questions and
    (row, reason) pairs for rows that could not be used.
    """
    path = Path(path)
    if path.suffix.lower() in (".jsonl", ".json"):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    else:
        rows = pd.read_csv(path, dtype=str, keep_default_na=False).to_dict("records")
    bad: list[tuple[str, str]] = []
    grouped: dict[tuple[str, str, str], ImportedQuestion] = {}
    seen_slots: dict[tuple[str, str], list[str]] = {}
    for k, r in enumerate(rows):
        clip, q = str(r.get("clip_id") or "").strip(), str(r.get("question") or "").strip()
        cat, ctype = _causal_split(_norm_category(r.get("category") or ""), r.get("causal_type"))
        if not clip or not q:
            bad.append((f"row{k}", "import_missing_field"))
            continue
        if cat not in categories():
            bad.append((f"row{k}", "import_unknown_category"))
            continue
        answers = r.get("answers")
        if isinstance(answers, str):
            answers = [answers]
        answers = list(answers or [])
        answers += [str(r[c]) for c in sorted(r) if re.fullmatch(r"answer_\d+", str(c)) and str(r[c]).strip()]
        if str(r.get("answer") or "").strip():
            answers.append(str(r["answer"]).strip())
        key_q = (clip, cat, q)
        slot = str(r.get("slot") or "").strip().lower()
        if key_q in grouped:
            grouped[key_q].answers += answers
            continue
        slots = seen_slots.setdefault((clip, cat), [])
        if not slot:
            slot = "ab"[len(slots)] if len(slots) < 2 else f"x{len(slots)}"
        slots.append(slot)
        grouped[key_q] = ImportedQuestion(
            clip, cat, slot, q, [a.strip() for a in answers if str(a).strip()], causal_type=ctype
        )
    return list(grouped.values()), bad
