"""Multiple-choice helpers shared by every recipe and by the splits stage.

* ``shuffle_options``: a seeded shuffle that keeps each option's type (``correct``,
  ``FS``, ``SU``, ``NE``, ``distractor``...) attached, so error types can be counted after
  evaluation; the same seed always gives the same order.
* ``balanced_positions``: correct-option positions spread evenly over a set of items
  (a seeded shuffle of a round-robin), for callers that want exact balance rather than
  the balance a random shuffle gives on average.
* ``position_balance``: how often each letter is the answer, and the largest deviation of
  a letter's share from uniform (plus a chi-square p-value).
* ``length_bias``: the share of items whose correct option is strictly the longest (a
  cue a model can exploit without reading), against the chance rate ``mean(1/k)``.
* ``duplicate_options``: equal (after normalisation) or near-equal options in one item.

Plain functions, no Dagster; ``assets/recipes/mcq_checks.py`` wraps them as asset checks.
"""

from __future__ import annotations

import hashlib
import random
import re
import string
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from difflib import SequenceMatcher

LETTERS = string.ascii_uppercase
CORRECT = "correct"


def letter(index: int) -> str:
    return LETTERS[index]


def letter_index(value: str) -> int:
    """``"C"`` → 2 (case-insensitive, surrounding space and ``)``/``.`` ignored)."""
    v = value.strip().strip(").").strip().upper()
    if len(v) != 1 or v not in LETTERS:
        raise ValueError(f"not an option letter: {value!r}")
    return LETTERS.index(v)


def seeded_rng(*seed: object) -> random.Random:
    """A ``random.Random`` that depends only on ``seed`` (not on PYTHONHASHSEED)."""
    digest = hashlib.sha256("\x1f".join(map(str, seed)).encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


@dataclass(frozen=True)
class ShuffledMCQ:
    options: list[str]
    option_types: list[str]
    correct_index: int  # position of the (first) option whose type is ``correct_type``

    @property
    def answer(self) -> str:
        return letter(self.correct_index)


def shuffle_options(
    options: Sequence[str],
    option_types: Sequence[str],
    seed: object,
    correct_type: str = CORRECT,
    correct_position: int | None = None,
) -> ShuffledMCQ:
    """Shuffle ``options`` with their types, deterministically for ``seed``.

    With ``correct_position`` the correct option is then moved to that index (the other
    options keep their shuffled relative order), so a caller can impose a balanced
    position plan (see ``balanced_positions``) and still get a seeded distractor order.
    """
    if len(options) != len(option_types):
        raise ValueError(f"{len(options)} options but {len(option_types)} types")
    if correct_type not in option_types:
        raise ValueError(f"no option of type {correct_type!r}")
    pairs = list(zip(options, option_types))
    seeded_rng("shuffle", seed).shuffle(pairs)
    if correct_position is not None:
        if not 0 <= correct_position < len(pairs):
            raise ValueError(f"correct_position {correct_position} out of range for {len(pairs)} options")
        i = next(k for k, (_, t) in enumerate(pairs) if t == correct_type)
        pairs.insert(correct_position, pairs.pop(i))
    opts = [o for o, _ in pairs]
    types = [t for _, t in pairs]
    return ShuffledMCQ(opts, types, types.index(correct_type))


def balanced_positions(item_ids: Sequence[str], n_options: int, seed: object = "") -> dict[str, int]:
    """Correct positions for ``item_ids`` whose counts differ by at most one.

    Items are ordered by id (so the plan does not depend on input order), positions are
    dealt round-robin, then shuffled with a seeded RNG.
    """
    ids = sorted(set(item_ids))
    positions = [i % n_options for i in range(len(ids))]
    seeded_rng("positions", seed, n_options).shuffle(positions)
    return dict(zip(ids, positions))


@dataclass(frozen=True)
class PositionBalance:
    n: int  # items counted
    counts: dict[str, int]  # letter → items whose answer is that letter
    shares: dict[str, float]
    expected_share: float  # 1 / n_options
    max_deviation: float  # max |share - expected| over letters (0 = perfectly uniform)
    chi2: float
    p_value: float  # chi-square goodness of fit against uniform (1.0 when n == 0)


def position_balance(answers: Iterable[str | int], n_options: int) -> PositionBalance:
    """Counts of the correct position per letter and the deviation from uniform.

    ``answers`` are letters (``"B"``) or 0-based indices; multi-answer strings (``"A,C"``)
    count once per letter.
    """
    letters = LETTERS[:n_options]
    counts = {ch: 0 for ch in letters}
    for a in answers:
        parts = [a] if isinstance(a, int) else [p for p in str(a).split(",") if p.strip()]
        for p in parts:
            idx = p if isinstance(p, int) else letter_index(p)
            if idx >= n_options:
                raise ValueError(f"answer {a!r} outside {n_options} options")
            counts[letters[idx]] += 1
    n = sum(counts.values())
    expected = 1.0 / n_options
    shares = {k: (v / n if n else 0.0) for k, v in counts.items()}
    max_dev = max((abs(s - expected) for s in shares.values()), default=0.0) if n else 0.0
    if n:
        from scipy.stats import chisquare

        res = chisquare(list(counts.values()))
        chi2, p = float(res.statistic), float(res.pvalue)
    else:
        chi2, p = 0.0, 1.0
    return PositionBalance(n, counts, shares, expected, max_dev, chi2, p)


@dataclass(frozen=True)
class LengthBias:
    n: int
    correct_longest: int  # items whose correct option is strictly the longest
    share_longest: float
    correct_shortest: int  # items whose correct option is strictly the shortest
    share_shortest: float
    chance: float  # mean of 1/k over items: the share expected without a length cue
    excess: float  # share_longest - chance


def length_bias(items: Iterable[tuple[Sequence[str], int]]) -> LengthBias:
    """How often the correct option is the longest (in characters, after stripping).

    ``items`` yields ``(options, correct_index)``. Ties do not count as longest: an item
    whose correct option ties with another for the longest gives no length cue.
    """
    n = longest = shortest = 0
    chance = 0.0
    for options, ci in items:
        lens = [len(str(o).strip()) for o in options]
        if not lens:
            continue
        n += 1
        chance += 1.0 / len(lens)
        others = lens[:ci] + lens[ci + 1 :]
        if others and lens[ci] > max(others):
            longest += 1
        if others and lens[ci] < min(others):
            shortest += 1
    share = longest / n if n else 0.0
    chance = chance / n if n else 0.0
    return LengthBias(n, longest, share, shortest, shortest / n if n else 0.0, chance, share - chance)


_PUNCT = re.compile(r"[^\w\s]", re.UNICODE)
_SPACE = re.compile(r"\s+")


def normalize_option(text: str) -> str:
    """Case-folded, accents and punctuation removed, whitespace collapsed."""
    t = unicodedata.normalize("NFKD", str(text))
    t = "".join(ch for ch in t if not unicodedata.combining(ch)).casefold()
    return _SPACE.sub(" ", _PUNCT.sub(" ", t)).strip()


def option_similarity(a: str, b: str) -> float:
    """``difflib`` ratio of the normalised strings (1.0 = equal after normalisation)."""
    na, nb = normalize_option(a), normalize_option(b)
    if na == nb:
        return 1.0
    return SequenceMatcher(None, na, nb, autojunk=False).ratio()


@dataclass(frozen=True)
class DuplicatePair:
    i: int
    j: int
    similarity: float
    exact: bool  # equal after normalisation


def duplicate_options(options: Sequence[str], threshold: float = 0.9) -> list[DuplicatePair]:
    """Pairs of options that are equal after normalisation or at least ``threshold`` similar."""
    out: list[DuplicatePair] = []
    for i in range(len(options)):
        for j in range(i + 1, len(options)):
            s = option_similarity(options[i], options[j])
            if s >= threshold:
                out.append(
                    DuplicatePair(i, j, round(s, 4), normalize_option(options[i]) == normalize_option(options[j]))
                )
    return out


@dataclass(frozen=True)
class DuplicateStats:
    n: int
    items_with_duplicates: int
    items_with_exact: int
    rate: float
    examples: list[dict] = field(default_factory=list)


def duplicate_stats(
    items: Iterable[tuple[str, Sequence[str]]], threshold: float = 0.9, max_examples: int = 5
) -> DuplicateStats:
    """Share of items (``(item_id, options)``) with at least one (near-)duplicate pair."""
    n = dup = exact = 0
    examples: list[dict] = []
    for item_id, options in items:
        n += 1
        pairs = duplicate_options(options, threshold)
        if pairs:
            dup += 1
            exact += any(p.exact for p in pairs)
            if len(examples) < max_examples:
                p = pairs[0]
                examples.append({"item_id": item_id, "a": options[p.i], "b": options[p.j], "similarity": p.similarity})
    return DuplicateStats(n, dup, exact, dup / n if n else 0.0, examples)
