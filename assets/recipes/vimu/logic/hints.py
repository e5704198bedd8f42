"""Hint-free check in code (Stage 3/4): a question must not name the tested dimension or any
taxonomy term.

Matching is case-insensitive at word boundaries; multi-word terms match across spaces, hyphens
and underscores; the last word of a term also matches its simple inflections (plural, -ed, -ing,
-ly, y→ies/ied/ily, silent e dropped before -ing/-ed). Derived forms that are not simple
inflections ("sarcastic", "ironic") are listed as terms in ``taxonomy.yaml``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_SEP = r"[\s\-_/]+"
_SUFFIXES = ("", "s", "es", "ed", "d", "ing", "ly", "er", "ers")


def _inflections(word: str) -> set[str]:
    w = word.lower()
    forms = {w + s for s in _SUFFIXES}
    if w.endswith("y") and len(w) > 2:
        stem = w[:-1]
        forms |= {stem + "ies", stem + "ied", stem + "ily"}
    if w.endswith("e") and len(w) > 2:
        stem = w[:-1]
        forms |= {stem + "ing", stem + "ed"}
    return forms


@lru_cache(maxsize=4096)
def term_pattern(term: str) -> re.Pattern[str]:
    words = [w for w in re.split(r"[\s\-_/]+", term.strip().lower()) if w]
    if not words:
        raise ValueError("empty hint term")
    head = _SEP.join(re.escape(w) for w in words[:-1])
    last = "(?:" + "|".join(re.escape(f) for f in sorted(_inflections(words[-1]), key=len, reverse=True)) + ")"
    body = f"{head}{_SEP}{last}" if head else last
    return re.compile(rf"(?<![A-Za-z0-9]){body}(?![A-Za-z0-9])", re.IGNORECASE)


@dataclass(frozen=True)
class HintLeak:
    term: str  # the taxonomy term that leaked
    matched: str  # the text found in the question


def find_hint_leaks(text: str, terms: list[str] | tuple[str, ...]) -> list[HintLeak]:
    """Every taxonomy term named in ``text`` (first occurrence per term), in term order."""
    leaks: list[HintLeak] = []
    for term in terms:
        if not term or not term.strip():
            continue
        m = term_pattern(term).search(text or "")
        if m:
            leaks.append(HintLeak(term, m.group(0)))
    return leaks


def leak_feedback(leaks: list[HintLeak]) -> str:
    """Feedback for the regeneration turn, phrased like a validator's major-revision note."""
    named = ", ".join(sorted({f'"{leak.matched}"' for leak in leaks}))
    return (
        f"Major revision: the question is not hint-free. It names {named}, which reveals the "
        "dimension or category being tested. Rewrite the question so that it asks what the video "
        "means without naming any rhetorical device, social attitude, evidence type or the kind "
        "of meaning to look for; keep the reference answer and points aligned with the annotation."
    )
