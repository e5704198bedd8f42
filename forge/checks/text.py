"""Text statistics for pools of answers / statements, as MAIA measures them (App. A.4, A.6).

Tokenisation (one definition for every statistic here, so numbers are comparable):

* Unicode-normalise (NFKC), casefold, map curly apostrophes to ``'``;
* tokens are maximal runs of letters/digits, with inner apostrophes or hyphens kept
  (``don't``, ``wood-fired``, ``30``); punctuation is dropped;
* **content words** approximate MAIA's "adjectives, nouns, verbs and adverbs" without a
  POS tagger (none ships offline): a token is a content word unless it is in the closed-class
  list of its language (``FUNCTION_WORDS_BY_LANG``: determiners, pronouns, prepositions,
  articulated prepositions, conjunctions, auxiliaries and modals, negation, a few particles)
  or a pure number.
* **language** (``lang``, ISO 639-1; ``en`` by default, ``it`` for MAIA's native-Italian
  release): selects the function-word list and the elision rule. Italian elisions are split
  after the apostrophe (``l'uomo`` → ``l'`` + ``uomo``, ``dell'acqua`` → ``dell'`` +
  ``acqua``), so the article counts as a function word and ``uomo`` as the content word it is;
  English contractions stay whole (``don't``). Every statistic below takes ``lang``.

Statistics:

* ``lexical_overlap(a, b)`` — MAIA "checked the number of Type-Tokens shared between answer
  pairs ... and selected those that shared more than 50 % of them": the share of the pair's
  word types that both sentences use, ``|T(a) ∩ T(b)| / |T(a) ∪ T(b)|`` (Jaccard over types).
  ``method="min"`` divides by the smaller type set instead (stricter: a sentence contained
  in another scores 1.0).
* ``pool_overlap(texts)`` — every pair's overlap, its mean (MAIA's "pool average lexical
  overlap", reference 18.74 % for answers) and max, and the pairs above a threshold.
* ``type_token_ratio(texts)`` — types / tokens over the concatenated pool (MAIA "TTR per
  pool", reference 0.55 on content words).
* ``token_edit_distance(a, b)`` — Levenshtein distance over tokens (the size of a foil's edit).
* ``equal_pairs(texts)`` — pairs of strings equal after normalisation (case, spaces, final
  punctuation).
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field

_TOKEN = re.compile(r"[^\W_]+(?:['\-][^\W_]+)*", re.UNICODE)
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")

# Closed-class English words: what is NOT an adjective, noun, verb or adverb in MAIA's sense.
FUNCTION_WORDS: frozenset[str] = frozenset(
    """
    a an the this that these those some any no every each either neither all both half several
    much many more most few fewer less least other another such what which whose whatever whichever
    i me my mine myself you your yours yourself yourselves he him his himself she her hers herself
    it its itself we us our ours ourselves they them their theirs themselves one ones someone
    somebody something anyone anybody anything everyone everybody everything nobody nothing none
    who whom whoever
    about above across after against along amid among around as at before behind below beneath
    beside besides between beyond by despite down during except for from in inside into like near
    of off on onto out outside over past per since than through throughout till to toward towards
    under underneath unlike until up upon via with within without
    and or but nor so yet if because although though while whereas unless whether when whenever
    where wherever why how then also just too very
    be am is are was were been being 's 're 'm
    have has had having 've 'd
    do does did doing done
    will would shall should can could may might must ought 'll
    not no n't don't doesn't didn't isn't aren't wasn't weren't hasn't haven't hadn't won't
    wouldn't can't cannot couldn't shouldn't mustn't mightn't
    i'm you're he's she's it's we're they're i've you've we've they've i'd you'd he'd she'd we'd
    they'd i'll you'll he'll she'll we'll they'll there's that's what's who's let's
    there here to
    """.split()
)


# Closed-class Italian words (articles, articulated prepositions, clitic and personal pronouns,
# conjunctions, essere / avere / modal forms, negation). Elided forms carry their apostrophe
# because ``tokens(..., "it")`` splits them off as ``l'``, ``dell'``, ``c'`` ...
FUNCTION_WORDS_IT: frozenset[str] = frozenset(
    """
    il lo la i gli le l' un uno una un' del dello della dei degli delle dell' al allo alla ai agli
    alle all' dal dallo dalla dai dagli dalle dall' nel nello nella nei negli nelle nell' sul sullo
    sulla sui sugli sulle sull' col coi
    di a da in con su per tra fra d' senza sotto sopra dentro fuori verso presso durante contro
    dopo prima davanti dietro accanto vicino lungo oltre
    e ed o od ma però anche né se perché poiché che ch' come quando mentre dove dov' quindi dunque
    oppure sia cioè infatti anzi neanche nemmeno neppure pure
    io tu lui lei egli ella esso essa noi voi loro essi esse me te sé mi ti ci vi si ne lo li c' m'
    t' s' v' n' gliel' glielo gliela gliele
    mio mia miei mie tuo tua tuoi tue suo sua suoi sue nostro nostra nostri nostre vostro vostra
    vostri vostre
    questo questa questi queste quest' quello quella quelli quelle quell' quel quei quegli
    chi cui cosa cos' qual quale quali quanto quanta quanti quante
    ogni ciascuno ciascuna qualche alcuni alcune alcuno alcuna nessuno nessuna nessun tutto tutta
    tutti tutte altro altra altri altre stesso stessa stessi stesse tanto tanta tanti tante molto
    molta molti molte poco poca pochi poche troppo troppa troppi troppe
    non no sì già ancora mai più meno molto poco così ecco solo po
    essere è e' sono sei siamo siete era erano ero eri eravamo stato stata stati state sarà
    saranno sarebbe sarebbero sia siano fosse fossero c'è
    avere ho hai ha abbiamo avete hanno aveva avevano avevo avuto avrà avranno avrebbe abbia
    abbiano avesse
    potere può possono potrebbe potrebbero dovere deve devono dovrebbe dovrebbero volere vuole
    vogliono vorrebbe sta stanno stava stavano
    """.split()
)

FUNCTION_WORDS_BY_LANG: dict[str, frozenset[str]] = {"en": FUNCTION_WORDS, "it": FUNCTION_WORDS_IT}
LANGUAGES: tuple[str, ...] = tuple(FUNCTION_WORDS_BY_LANG)
# Languages whose apostrophe marks an elision (article / preposition + word), split off.
_ELIDING = frozenset({"it", "fr"})
_ELISION = re.compile(r"^([^\W_]+')([^\W_].*)$", re.UNICODE)


def check_language(lang: str) -> str:
    """``lang`` normalised (``IT`` → ``it``, ``it-IT`` → ``it``); unknown languages are an error,
    not a silent fall-back to English."""
    code = str(lang or "en").strip().lower().replace("_", "-").split("-")[0]
    if code not in FUNCTION_WORDS_BY_LANG:
        raise ValueError(f"no function-word list for language {lang!r}; known: {list(LANGUAGES)}")
    return code


def guess_language(text: str) -> str:
    """The known language whose function words cover most of ``text``'s tokens (``en`` on a tie
    or an empty text). Coarse on purpose: it tells an Italian prompt from an English one."""
    best, best_share = "en", 0.0
    for lang in LANGUAGES:
        toks = tokens(text, lang)
        share = sum(t in FUNCTION_WORDS_BY_LANG[lang] for t in toks) / len(toks) if toks else 0.0
        if share > best_share:
            best, best_share = lang, share
    return best


def normalise(text: str) -> str:
    t = unicodedata.normalize("NFKC", text or "").replace("\u2019", "'").replace("\u2018", "'")
    return t.casefold()


def _split_elision(token: str) -> list[str]:
    out: list[str] = []
    while (m := _ELISION.match(token)) is not None:  # "dell'altr'anno" → dell' altr' anno
        out.append(m.group(1))
        token = m.group(2)
    return out + [token]


def tokens(text: str, lang: str = "en") -> list[str]:
    """Word tokens of ``text`` (see the module docstring for the exact rule)."""
    toks = _TOKEN.findall(normalise(text))
    if check_language(lang) in _ELIDING:
        toks = [p for t in toks for p in _split_elision(t)]
    return toks


def is_content_word(token: str, lang: str = "en") -> bool:
    return token not in FUNCTION_WORDS_BY_LANG[check_language(lang)] and not _NUMBER.match(token)


def content_tokens(text: str, lang: str = "en") -> list[str]:
    return [t for t in tokens(text, lang) if is_content_word(t, lang)]


def _toks(text: str, content_only: bool, lang: str = "en") -> list[str]:
    return content_tokens(text, lang) if content_only else tokens(text, lang)


def lexical_overlap(a: str, b: str, content_only: bool = False, method: str = "jaccard", lang: str = "en") -> float:
    """Share of word types two sentences have in common (0..1); 0 when either is empty."""
    ta, tb = set(_toks(a, content_only, lang)), set(_toks(b, content_only, lang))
    if not ta or not tb:
        return 0.0
    shared = len(ta & tb)
    if method == "jaccard":
        return shared / len(ta | tb)
    if method == "min":
        return shared / min(len(ta), len(tb))
    raise ValueError(f"unknown overlap method {method!r}")


@dataclass
class PoolOverlap:
    mean: float  # average over all pairs (MAIA's pool figure)
    max: float
    pairs: dict[tuple[int, int], float] = field(default_factory=dict)
    above: list[tuple[int, int]] = field(default_factory=list)  # pairs with overlap > threshold

    def offenders(self) -> list[int]:
        """Indices to rephrase, most-overlapping first: greedy cover of the pairs above threshold."""
        left = list(self.above)
        out: list[int] = []
        while left:
            counts: dict[int, float] = {}
            for i, j in left:
                for k in (i, j):
                    counts[k] = counts.get(k, 0.0) + self.pairs[(i, j)]
            # the later member of a pair is rephrased on ties (MAIA rephrases "A8" against A1..A7)
            pick = max(counts, key=lambda k: (counts[k], k))
            out.append(pick)
            left = [p for p in left if pick not in p]
        return out


def pool_overlap(
    texts: Sequence[str], threshold: float = 0.5, content_only: bool = False, method: str = "jaccard", lang: str = "en"
) -> PoolOverlap:
    pairs = {
        (i, j): lexical_overlap(texts[i], texts[j], content_only, method, lang)
        for i, j in itertools.combinations(range(len(texts)), 2)
    }
    if not pairs:
        return PoolOverlap(mean=0.0, max=0.0)
    vals = list(pairs.values())
    return PoolOverlap(
        mean=sum(vals) / len(vals),
        max=max(vals),
        pairs=pairs,
        above=[p for p, v in pairs.items() if v > threshold],
    )


def overlap_with_others(
    texts: Sequence[str], index: int, content_only: bool = False, method: str = "jaccard", lang: str = "en"
) -> float:
    """Highest overlap of ``texts[index]`` with any other member (the rephrase target is ≤ 50 %)."""
    others = [lexical_overlap(texts[index], t, content_only, method, lang) for k, t in enumerate(texts) if k != index]
    return max(others, default=0.0)


def type_token_ratio(texts: Sequence[str] | str, content_only: bool = False, lang: str = "en") -> float:
    """Distinct tokens / tokens over the whole pool (0 for an empty pool)."""
    if isinstance(texts, str):
        texts = [texts]
    toks = [t for text in texts for t in _toks(text, content_only, lang)]
    return len(set(toks)) / len(toks) if toks else 0.0


def token_edit_distance(a: str, b: str, lang: str = "en") -> int:
    """Levenshtein distance between the token sequences (insert, delete, substitute = 1)."""
    ta, tb = tokens(a, lang), tokens(b, lang)
    if len(ta) < len(tb):
        ta, tb = tb, ta
    prev = list(range(len(tb) + 1))
    for i, x in enumerate(ta, 1):
        cur = [i]
        for j, y in enumerate(tb, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (x != y)))
        prev = cur
    return prev[-1]


def canonical(text: str) -> str:
    """What "equal strings" compares: casefolded, single-spaced, without final punctuation."""
    t = re.sub(r"\s+", " ", normalise(text)).strip()
    return t.rstrip(" .!?;:,").strip()


def equal_pairs(texts: Sequence[str]) -> list[tuple[int, int]]:
    """Index pairs (i < j) whose texts are equal after ``canonical``."""
    canon = [canonical(t) for t in texts]
    return [(i, j) for i, j in itertools.combinations(range(len(texts)), 2) if canon[i] == canon[j]]


def duplicate_indices(texts: Sequence[str]) -> list[int]:
    """Indices equal to an earlier text (the later copy is the one to rephrase)."""
    return sorted({j for _, j in equal_pairs(texts)})


def pool_stats(
    texts: Sequence[str], threshold: float = 0.5, method: str = "jaccard", lang: str = "en"
) -> dict[str, float | int]:
    """Every statistic MAIA reports for one pool (Table 7 / Table 8 columns), in ``lang``."""
    ov = pool_overlap(texts, threshold, False, method, lang)
    ov_cw = pool_overlap(texts, threshold, True, method, lang)
    return {
        "n": len(texts),
        "equal_pairs": len(equal_pairs(texts)),
        "overlap_mean": ov.mean,
        "overlap_max": ov.max,
        "pairs_over_threshold": len(ov.above),
        "overlap_mean_cw": ov_cw.mean,
        "overlap_max_cw": ov_cw.max,
        "ttr": type_token_ratio(texts, lang=lang),
        "ttr_cw": type_token_ratio(texts, content_only=True, lang=lang),
    }
