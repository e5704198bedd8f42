"""What a person may type into a plain-text field of the tool (docs/review.md, "Typed text"):
the one set of rules every reader of people's text applies (review edits and notes, unit members,
protocol answers, blind answers), so an edit is text people can read or it is refused with a reason.

* the text is normalised to Unicode NFC and its line ends to ``\\n`` (what the person typed keeps
  its meaning; only its encoding is made canonical);
* refused, each with a code and a reason for people:

  - ``empty_field``: nothing but spaces;
  - ``invisible_only``: no visible character, only ones that draw nothing (Unicode categories
    Cc, Cf, Z*, marks without a base, and the characters Unicode names a FILLER or BLANK);
  - ``control_character``: a control character (category Cc: NUL, ESC, DEL, C1 controls); a line
    break or tab only where the field takes several lines;
  - ``bidi_control``: an embedding, override or isolate (bidirectional class LRE, RLE, LRO, RLO,
    PDF, LRI, RLI, FSI, PDI), which reorders what people read around it;
  - ``not_text``: a lone surrogate, which no UTF-8 file can hold;
  - ``markup``: HTML where the field is plain text: a tag, comment or declaration (``<`` followed
    by a letter, ``/``, ``!`` or ``?``, as the HTML tokenizer starts one), a character reference
    (``&lt;``, ``&#60;``; a name HTML5 defines) or an event-handler attribute (``onerror=alert(1)``).

Invisible characters that are not refused (a zero-width joiner in an emoji sequence or a
Persian word, a soft hyphen) stay in the text: only a text made of nothing else is refused.
Dagster-free, standard library only.
"""

from __future__ import annotations

import re
import unicodedata
from html.entities import html5

# Unicode bidirectional classes of the explicit embedding, override and isolate controls (UAX #9)
BIDI_CONTROLS = frozenset({"LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"})
LINE_BREAKS = frozenset("\n\t")  # the Cc characters a multi-line field keeps
# the HTML tokenizer's tag open state: a letter (start tag), "/" (end tag), "!" (comment or
# declaration), "?" (processing instruction); "a < b" and "<3" stay text
TAG = re.compile(r"<[A-Za-z/!?]")
CHAR_REF = re.compile(r"&(#[0-9]+;?|#[xX][0-9A-Fa-f]+;?|[A-Za-z][A-Za-z0-9]*;)")
EVENT_ATTR = re.compile(r"\bon[a-z]+\s*=\s*([\"'`]|[A-Za-z_$][\w$.]*\s*\()", re.IGNORECASE)


class TextRefused(ValueError):
    """A typed text the rules refuse: ``code`` names the rule, ``str(exc)`` says why for people."""

    def __init__(self, code: str, detail: str):
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


def describe(ch: str) -> str:
    """``U+202E RIGHT-TO-LEFT OVERRIDE``: how a refusal names a character people cannot see."""
    return f"U+{ord(ch):04X} {unicodedata.name(ch, unicodedata.category(ch))}"


def visible(ch: str) -> bool:
    """Whether the character draws something: a letter, number, punctuation or symbol, a spacing
    mark, or a combining mark (checked with its base by ``has_visible``). Unicode's fillers and
    blanks (HANGUL FILLER, BRAILLE PATTERN BLANK) are letters or symbols that draw nothing."""
    cat = unicodedata.category(ch)
    if cat[0] not in "LNPSM":
        return False
    name = unicodedata.name(ch, "")
    return not (name.endswith(" FILLER") or name.endswith(" BLANK"))


def has_visible(text: str) -> bool:
    """A character that draws something; combining marks count only on a visible base."""
    base = False
    for ch in text:
        if unicodedata.category(ch)[0] == "M":
            if base:
                return True
            continue
        base = visible(ch)
        if base:
            return True
    return False


def _is_reference(body: str) -> bool:
    """A numeric reference, or a name HTML5 defines (``html.entities.html5``): "R&D;" stays text."""
    return body.startswith("#") or body in html5


def clean(text: str, what: str, multiline: bool = True, plain: bool = True) -> str:
    """``text`` normalised (NFC, ``\\n`` line ends, outer whitespace removed), or ``TextRefused``
    with the rule it breaks; ``what`` names the field for people ("the corrected question");
    ``plain``: the field is plain text, so markup is refused (every field of the tool today)."""
    t = unicodedata.normalize("NFC", str(text).replace("\r\n", "\n").replace("\r", "\n"))
    for ch in t:
        cat = unicodedata.category(ch)
        if cat == "Cs":
            raise TextRefused("not_text", f"{what} holds a lone surrogate ({describe(ch)}), not text")
        if cat == "Cc" and not (multiline and ch in LINE_BREAKS):
            raise TextRefused("control_character", f"{what} holds the control character {describe(ch)}")
        if unicodedata.bidirectional(ch) in BIDI_CONTROLS:
            raise TextRefused(
                "bidi_control", f"{what} holds {describe(ch)}, which reorders the text people read around it"
            )
    t = t.strip()
    if not t:
        raise TextRefused("empty_field", f"{what} is empty")
    if not has_visible(t):
        shown = ", ".join(sorted({describe(ch) for ch in t}))
        raise TextRefused("invisible_only", f"{what} holds no visible character, only {shown}")
    if not plain:
        return t
    for pattern, kind in (
        (TAG, "an HTML tag"),
        (CHAR_REF, "an HTML character reference"),
        (EVENT_ATTR, "an event handler"),
    ):
        m = next((m for m in pattern.finditer(t) if pattern is not CHAR_REF or _is_reference(m.group(1))), None)
        if m:
            # where, not what: the refusal goes back to people and must not carry the markup itself
            raise TextRefused("markup", f"{what} is plain text and holds {kind} at character {m.start() + 1}")
    return t
