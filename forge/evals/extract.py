"""Answer extraction from free-text model replies (docs/evals.md, "Extraction rules").

A reply that cannot be read as an answer is a *failure* (``ok=False`` with a reason), never
a guess: evaluators count it as wrong for accuracy and report the success rate next to it.
A benchmark whose paper reads replies its own way overrides ``PaperHooks.parse_reply`` (its
``assets/recipes/<name>/logic/evaluation.py``) and builds on these readers.

Multiple choice, in order of precedence:

1. **Answer marker**: if the reply contains ``Answer:`` / ``answer is`` / ``final answer``,
   only the text after the *last* marker is read (CoT replies reason over every option first).
2. **Letters only**: the region is nothing but option letters and separators
   (``C``, ``(C)``, ``c)``, ``C.``, ``A, C``, ``A and C``, ``[B]``) → those letters.
3. **Delimited letters** inside prose: ``(C)`` or ``C)`` (upper or lower case)
   → those letters; else a capital letter named as an option (``Option A``, ``Label: B``,
   ``the true statement is B``); with a marker also a bare capital letter right after it
   (``Answer: C is right``).
4. **Option text**: the options whose text occurs in the region as whole words
   (case-insensitive; an option contained in a longer matching option is dropped).

Single-answer questions need exactly one distinct letter; several distinct letters is
``ambiguous`` (a failure). Letters outside the item's option range are ignored.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

LETTERS = "ABCDEFGHIJ"
_MARKER = re.compile(
    r"(?:final\s+answer|answer\s*(?:is|:)|answer\s*-|\banswer\b(?=\s*[:(\[]?\s*[A-Ja-j]\b))\s*[:\-]?", re.I
)
# "Option A", "Label: B", "the true statement is B": a capital letter named as an option.
_NAMED = re.compile(r"\b(?i:option|choice|label|letter|statement(?:\s+is)?)\s*[:\-]?\s*[\(\[]?([A-J])\b(?!')")
_SEP = r"[\s,;/&+]*(?:\b(?:and|or|&)\b)?[\s,;/&+]*"
_TOKEN = r"[\(\[\*]*([A-Ja-j])[\)\]\.\*:]*"


@dataclass(frozen=True)
class Extraction:
    letters: tuple[str, ...] = ()
    ok: bool = False
    method: str = ""  # letters_only | delimited | marker_letter | option_text | text
    reason: str = ""  # why it failed: empty | ambiguous | no_answer | out_of_range ...
    text: str = ""  # extracted free text (open-ended kinds)
    values: dict = field(default_factory=dict)

    @property
    def answer(self) -> str:
        return ",".join(self.letters) if self.letters else self.text


def _fail(reason: str) -> Extraction:
    return Extraction(ok=False, reason=reason)


def answer_region(reply: str) -> tuple[str, bool]:
    """The text after the last answer marker (and whether there was one)."""
    matches = list(_MARKER.finditer(reply))
    if not matches:
        return reply, False
    return reply[matches[-1].end() :], True


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^\w\s]", " ", text.lower())).strip()


def _option_text_matches(region: str, options: Sequence[str]) -> list[int]:
    hay = f" {_norm(region)} "
    found = [i for i, o in enumerate(options) if _norm(o) and f" {_norm(o)} " in hay]
    # "Literal" inside "Literal / Direct": keep the longer option only.
    return [i for i in found if not any(j != i and _norm(options[i]) in _norm(options[j]) for j in found)]


def extract_choice(reply: str | None, options: Sequence[str], multi: bool = False) -> Extraction:
    """Option letters chosen in ``reply`` for a question with ``options`` (see module doc)."""
    if reply is None or not str(reply).strip():
        return _fail("empty")
    valid = LETTERS[: len(options)]
    region, marked = answer_region(str(reply))
    region = region.strip()
    if marked and not region:
        region, marked = str(reply).strip(), False
    first_line = region.splitlines()[0].strip() if region else ""
    candidates: list[tuple[str, list[str]]] = []
    for text in dict.fromkeys([region, first_line] if marked else [region]):
        m = re.fullmatch(rf"\s*{_TOKEN}(?:{_SEP}{_TOKEN})*\s*[\.\!]?\s*", text)
        if m:
            cleaned = re.sub(r"\b(?:and|or)\b", " ", text, flags=re.I)
            candidates.append(("letters_only", re.findall(r"[A-Ja-j]", cleaned)))
            break
    if not candidates:
        delimited = re.findall(r"(?<![A-Za-z])[\(\[]([A-Ja-j])[\)\]]|(?<![A-Za-z\(\[])([A-Ja-j])\)", region)
        letters = [a or b for a, b in delimited]
        if letters:
            candidates.append(("delimited", letters))
    if not candidates:
        named = _NAMED.findall(region)
        if named:
            candidates.append(("named_letter", named))
    if not candidates and marked:
        m = re.match(r"\s*\**([A-J])\b(?!')", region)
        if m:
            candidates.append(("marker_letter", [m.group(1)]))
    if candidates:
        method, raw = candidates[0]
        letters = sorted({x.upper() for x in raw})
        in_range = [x for x in letters if x in valid]
        if not in_range:
            return _fail("out_of_range")
        if not multi and len(in_range) > 1:
            return _fail("ambiguous")
        return Extraction(letters=tuple(in_range), ok=True, method=method)
    hits = _option_text_matches(region, options)
    if not hits and marked:
        hits = _option_text_matches(str(reply), options)
    if not hits:
        return _fail("no_answer")
    if not multi and len(hits) > 1:
        return _fail("ambiguous")
    return Extraction(letters=tuple(sorted(valid[i] for i in hits)), ok=True, method="option_text")


def extract_text(reply: str | None, question: str = "") -> Extraction:
    """An open-ended answer: the reply itself, unless empty or a mere echo of the question."""
    if reply is None or not str(reply).strip():
        return _fail("empty")
    text = str(reply).strip()
    region, marked = answer_region(text)
    if marked and region.strip():
        text = region.strip()
    if question and _norm(text) and _norm(text) in _norm(question):
        return _fail("echoes_prompt")
    return Extraction(ok=True, method="text", text=text)


_NAMING = re.compile(r"([A-Za-z][A-Za-z \-'’]*?)\s+(IS|is|ARE|are)\s+([A-Za-z][A-Za-z \-'’]*)")


def extract_naming(reply: str | None) -> Extraction:
    """A metaphor naming reply: a "TARGET IS SOURCE" line (the first line with IS/ARE)."""
    if reply is None or not str(reply).strip():
        return _fail("empty")
    for line in str(reply).strip().splitlines():
        line = line.strip().strip("\"'*. ")
        m = _NAMING.search(line)
        if m:
            # the model's own copula is kept ("LAWYERS ARE SHARKS"): the similarity is to its words
            return Extraction(
                ok=True,
                method="naming",
                text=f"{m.group(1).strip()} {m.group(2)} {m.group(3).strip()}".upper(),
                values={"target": m.group(1).strip().upper(), "source": m.group(3).strip().upper()},
            )
    return _fail("no_target_is_source")


_BOX = re.compile(r"([^\n:\[\]]+?)\s*:\s*\[\s*([-\d.eE]+)\s*,\s*([-\d.eE]+)\s*,\s*([-\d.eE]+)\s*,\s*([-\d.eE]+)\s*\]")


def extract_box(reply: str | None) -> Extraction:
    """A labelled box: ``label: [top, left, height, width]`` normalised to 0..1."""
    if reply is None or not str(reply).strip():
        return _fail("empty")
    m = _BOX.search(str(reply))
    if not m:
        return _fail("no_box")
    try:
        box = [float(m.group(i)) for i in range(2, 6)]
    except ValueError:
        return _fail("bad_number")
    if any(v < 0 or v > 1 for v in box) or box[2] <= 0 or box[3] <= 0:
        return _fail("box_out_of_range")
    label = m.group(1).strip().strip("\"'*-• ")
    return Extraction(ok=True, method="box", text=f"{label}: {box}", values={"label": label, "box": box})


def extract_word(reply: str | None) -> Extraction:
    """A one-word label: the first word (punctuation stripped)."""
    if reply is None or not str(reply).strip():
        return _fail("empty")
    region, _ = answer_region(str(reply))
    words = re.findall(r"[A-Za-z][A-Za-z\-']*", region) or re.findall(r"[A-Za-z][A-Za-z\-']*", str(reply))
    if not words:
        return _fail("no_word")
    return Extraction(ok=True, method="word", text=words[0].lower())


_ITAG = re.compile(r"<i>(.*?)</i>", re.I | re.S)


def extract_highlight(reply: str | None) -> Extraction:
    """Highlighted spans: the caption parts inside ``<i></i>`` (one or more spans)."""
    if reply is None or not str(reply).strip():
        return _fail("empty")
    spans = [s.strip() for s in _ITAG.findall(str(reply)) if s.strip()]
    if not spans:
        return _fail("no_highlight")
    return Extraction(ok=True, method="highlight", text=" | ".join(spans), values={"spans": spans})
