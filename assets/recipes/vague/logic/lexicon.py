"""A light rule-based lemmatiser for VAGUE's lexical ambiguity check.

The check asks one question: does the indirect expression *name* the solution's action
or key object? Both sides go through the same normaliser, so consistency matters more
than linguistic accuracy. ``lemma`` is:

1. lower-case; a small table of irregular forms (``took`` → ``take``, ``children`` →
   ``child``, ``people`` → ``person``...);
2. plural / verb suffixes: ``-ies/-ied`` → ``-y``, ``-ves`` → ``-f``, ``-sses`` → ``-ss``,
   ``-(ch|sh|x|z|s)es`` → stem, ``-s`` (not ``-ss/-us/-is``), ``-ing``, ``-ed`` (stems of
   at least three letters), then a doubled final consonant is undoubled
   (``running`` → ``run``);
3. a final silent ``-e`` is dropped (``close``/``closing``/``closed`` → ``clos``).

So it is a stemmer more than a dictionary lemmatiser: ``lemma`` values are keys for
matching, not words to show. Stop words (articles, pronouns, particles such as *up*,
*off*) are not content lemmas, so the action *pick up* is matched on *pick* alone.
"""

from __future__ import annotations

import re

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")

IRREGULAR = {
    "took": "take",
    "taken": "take",
    "gave": "give",
    "given": "give",
    "went": "go",
    "gone": "go",
    "made": "make",
    "brought": "bring",
    "bought": "buy",
    "caught": "catch",
    "held": "hold",
    "kept": "keep",
    "left": "leave",
    "put": "put",
    "ran": "run",
    "sat": "sit",
    "stood": "stand",
    "threw": "throw",
    "thrown": "throw",
    "wore": "wear",
    "worn": "wear",
    "ate": "eat",
    "eaten": "eat",
    "drank": "drink",
    "drunk": "drink",
    "shut": "shut",
    "turned": "turn",
    "children": "child",
    "men": "man",
    "women": "woman",
    "people": "person",
    "feet": "foot",
    "teeth": "tooth",
    "mice": "mouse",
    "knives": "knife",
    "leaves": "leaf",
    "shelves": "shelf",
    "glasses": "glass",
    "dishes": "dish",
    "boxes": "box",
    "clothes": "cloth",
    "tv": "television",
    "phones": "phone",
    "cellphone": "phone",
    "laptop": "laptop",
    "is": "be",
    "are": "be",
    "was": "be",
    "were": "be",
}

STOPWORDS = frozenset(
    """
a an the this that these those it its it's i me my mine we us our you your yours he him his she her
they them their there here what which who whom whose when where why how all any both each few more most
other some such no nor not only own same so than too very s t can will just don should now and but or
if because as until while of at by for with about against between into through during before after
above below to from up down in out on off over under again further then once be been being have has
had having do does did doing would could ought i'm you're he's she's we're they're i've you've we've
they've i'd you'd he'd she'd we'd they'd i'll you'll he'll she'll we'll they'll isn't aren't wasn't
weren't hasn't haven't hadn't doesn't don't didn't won't wouldn't shan't shouldn't can't cannot
couldn't mustn't let's that's who's what's here's there's when's where's why's how's hey oh wow
please just really maybe well yeah okay ok gonna wanna lot bit like
person1 person2 person3 person4 person5 person6 person7 person8 person9 speaker listener someone
""".split()
)


def tokens(text: str) -> list[str]:
    return _WORD.findall(str(text).lower().replace("’", "'"))


def _undouble(stem: str) -> str:
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] not in "aeiouslz":
        return stem[:-1]
    return stem


def lemma(word: str) -> str:
    w = word.lower().strip("'")
    if w in IRREGULAR:
        w = IRREGULAR[w]
    elif len(w) > 3:
        if w.endswith("ies") and len(w) > 4:
            w = w[:-3] + "y"
        elif w.endswith("ied") and len(w) > 4:
            w = w[:-3] + "y"
        elif w.endswith("ves") and len(w) > 4:
            w = w[:-3] + "f"
        elif w.endswith("sses"):
            w = w[:-2]
        elif re.search(r"(ch|sh|x|z|ss)es$", w):
            w = w[:-2]
        elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
            w = w[:-1]
        elif w.endswith("ing") and len(w) - 3 >= 3:
            w = _undouble(w[:-3])
        elif w.endswith("ed") and len(w) - 2 >= 3:
            w = _undouble(w[:-2])
    if len(w) > 3 and w.endswith("e") and not w.endswith(("ee", "ie", "ye")):
        w = w[:-1]
    return w


def lemmas(text: str) -> list[str]:
    return [lemma(t) for t in tokens(text)]


def content_lemmas(text: str) -> list[str]:
    """Lemmas of the non-stop-words of ``text``, in order (duplicates kept)."""
    return [lemma(t) for t in tokens(text) if t not in STOPWORDS and not t.isdigit()]


def content_words(text: str) -> list[str]:
    """The non-stop-words of ``text`` as written (for embedding them one by one)."""
    return [t for t in tokens(text) if t not in STOPWORDS and not t.isdigit()]


def mentions(text: str, phrase: str) -> list[str]:
    """Content lemmas of ``phrase`` that also occur in ``text`` (empty = not named)."""
    have = set(content_lemmas(text))
    return sorted({lem for lem in content_lemmas(phrase) if lem in have})
