"""Language identification of generated text (py3langid: langid.py's model, shipped inside the
wheel, so it runs offline).

Every recipe writes its benchmark in one language (MAIA: Italian by default, the others English).
Text a model returns in another language is rejected ``wrong_language`` *before* any other text
check: a question-form, first-person or overlap rule written for Italian says nothing sensible
about an English sentence (an English question has no Italian interrogative word, so it used to
die as ``yes_no_question``).

The identifier is restricted to a fixed set of candidate languages (short texts are far more
reliable against 20 likely languages than against langid's 97), and a text is called wrong only
when it is long enough to tell and the other language wins clearly; anything uncertain passes to
the recipe's own checks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from py3langid.langid import MODEL_FILE, LanguageIdentifier

from forge.checks.text import tokens
from forge.llm.refine import Verdict
from forge.llm.stub import STUB_MARK

WRONG_LANGUAGE = "wrong_language"
# Candidate languages: the benchmarks' own (it, en) and those a multilingual model drifts into.
CANDIDATES = ("en", "it", "es", "fr", "de", "pt", "nl", "ro", "ca", "pl", "ru", "zh", "ja", "ko", "tr", "sv")
MIN_WORDS = 3  # fewer word tokens: too short to tell (a name, "OK.", a number)
MIN_CONFIDENCE = 0.9  # normalised probability the other language must reach
NAMES = {"en": "English", "it": "Italian"}
FEEDBACK = {
    "en": "The text is not in English ({found} detected): write it in English.",
    "it": "Il testo non è in italiano (rilevato: {found}): scrivilo in italiano.",
}

_lock = threading.RLock()
_identifier: Any = None


def _model() -> Any:
    """langid's identifier over ``CANDIDATES`` with normalised probabilities (loaded once, ~0.3 s)."""
    global _identifier
    with _lock:
        if _identifier is None:
            ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
            ident.set_languages(list(CANDIDATES))
            _identifier = ident
        return _identifier


@dataclass(frozen=True)
class Detection:
    language: str  # ISO 639-1 code, one of CANDIDATES
    confidence: float  # normalised probability over CANDIDATES
    words: int  # word tokens of the text


def detect(text: str) -> Detection:
    """The most likely candidate language of ``text`` and its probability."""
    words = len(tokens(text or ""))
    if not (text or "").strip():
        return Detection("und", 0.0, 0)
    with _lock:  # the identifier keeps no state per call, but its numpy buffers are shared
        lang, prob = _model().classify(text)
    return Detection(str(lang), float(prob), words)


def wrong_language(
    text: str, expected: str, *, min_words: int = MIN_WORDS, min_confidence: float = MIN_CONFIDENCE
) -> Detection | None:
    """The detection when ``text`` is clearly not in ``expected``; None when it is, or cannot be told."""
    expected = str(expected).strip().lower().split("-")[0]
    if not (text or "").strip() or STUB_MARK in text:  # the offline stub's placeholders have no language
        return None
    d = detect(text)
    if d.words < min_words or d.language == expected or d.confidence < min_confidence:
        return None
    return d


def texts_of(data: dict[str, Any], fields: Sequence[str]) -> str:
    """The generated text fields of a reply, joined (lists of strings included)."""
    parts: list[str] = []
    for f in fields:
        v = data.get(f)
        if isinstance(v, str):
            parts.append(v)
        elif isinstance(v, list):
            parts.extend(str(x) for x in v if isinstance(x, str))
    return "\n".join(p for p in parts if p.strip())


def feedback(expected: str, found: Detection) -> str:
    template = FEEDBACK.get(expected, FEEDBACK["en"])
    return template.format(found=NAMES.get(found.language, found.language))


def language_check(expected: str, fields: Sequence[str]) -> Callable[[Any, dict[str, Any]], Verdict | None]:
    """A refine check (``forge.llm.refine``): a reply whose ``fields`` are in another language gets a
    ``major`` verdict from the source ``wrong_language`` (regenerated with feedback in ``expected``;
    still wrong after the rounds → the recipe's ``wrong_language`` reject)."""

    def wrong_language_check(req: Any, data: dict[str, Any]) -> Verdict | None:
        found = wrong_language(texts_of(data, fields), expected)
        return None if found is None else Verdict("major", feedback(expected, found), WRONG_LANGUAGE)

    wrong_language_check.__name__ = WRONG_LANGUAGE
    return wrong_language_check


def after_language(expected: str, fields: Sequence[str], check: Callable[..., Any]) -> Callable[..., Any]:
    """``check`` that runs only on text in ``expected``: in the wrong language the language check
    alone speaks (refine runs checks side by side, so each of them asks first)."""

    def gated(req: Any, data: dict[str, Any]) -> Any:
        if wrong_language(texts_of(data, fields), expected) is not None:
            return None
        return check(req, data)

    gated.__name__ = getattr(check, "__name__", "check")
    return gated


def wrong_language_outcome(outcome: Any) -> bool:
    """A refine outcome rejected because its text stayed in the wrong language."""
    return outcome.verdict is not None and outcome.verdict.source == WRONG_LANGUAGE


def language_first(expected: str, fields: Sequence[str], checks: Sequence[Callable[..., Any]]) -> list[Callable]:
    """The refine checks of a recipe with the language check first and every other check gated by it."""
    return [language_check(expected, fields), *(after_language(expected, fields, c) for c in checks)]
