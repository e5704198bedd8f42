"""Quality gates an item passes before export (pure functions; the asset wires them).

* ``field_problem``: empty question/answer/options, missing media, option types that do not
  line up, an answer letter outside the options → the item is dropped with that reason.
* ``duplicate_items``: the same question with the same options on the same media twice.
* ``rebalance_positions``: per split, correct-option shares within ± tolerance of uniform
  (or as close as the split size allows); a split outside it gets a seeded, balanced
  re-shuffle (``forge.checks.mcq``), option types moving with their options.
* ``blind_requests`` / ``score_blind``: a text-only model answers each multiple-choice item
  N times without the image; a unit (an item, or a pool of items sharing a unit key: a
  trial counts only when every item of the pool is right) answered correctly far above
  chance (one-sided binomial test and a minimum accuracy) is flagged as *blind-solvable*.
  The prompt is the same for single- and multi-answer items: it never reveals how many
  options are correct.
* ``unit_of`` / ``whole_units``: items tied by the benchmark's unit key (e.g. a pool of statement pairs) are
  kept or dropped together.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from forge.checks import mcq
from forge.items.fields import answer_letters, blank, is_mcq, lst, missing, unit_of  # noqa: F401
from forge.llm.types import LLMRequest, LLMResult
from forge.splits.config import BlindConfig


def _item_key(r: Any) -> str:
    opts = sorted(mcq.normalize_option(o) for o in (lst(r.options) or []))
    return json.dumps([mcq.normalize_option(r.question or ""), opts, sorted(lst(r.media_paths) or [])])


def duplicate_items(df: pd.DataFrame) -> dict[str, str]:
    """item_id → id of the kept twin, for items equal to an earlier one (smallest id kept)."""
    seen: dict[str, str] = {}
    dup: dict[str, str] = {}
    for r in df.sort_values("item_id").itertuples(index=False):
        k = _item_key(r)
        if k in seen:
            dup[r.item_id] = seen[k]
        else:
            seen[k] = r.item_id
    return dup


def duplicate_units(df: pd.DataFrame, units: dict[str, str]) -> dict[str, str]:
    """For a benchmark whose items come in units (a pool): item_id → a member of the kept
    twin unit, for every member of a unit whose members all equal an earlier unit's (the
    unit with the smallest id is kept). Equal items inside or across units that differ as a
    whole are not dropped: dropping one would split its unit."""
    members: dict[str, list[Any]] = {}
    for r in df.sort_values("item_id").itertuples(index=False):
        members.setdefault(units.get(r.item_id, r.item_id), []).append(r)
    seen: dict[str, str] = {}
    dup: dict[str, str] = {}
    for unit in sorted(members):
        k = json.dumps(sorted(_item_key(r) for r in members[unit]))
        if k in seen:
            dup |= {r.item_id: seen[k] for r in members[unit]}
        else:
            seen[k] = members[unit][0].item_id
    return dup


# -- correct-option position ------------------------------------------------------------------


def achievable_deviation(n: int, k: int) -> float:
    """The smallest max |share − 1/k| possible with n items (counts differ by at most one)."""
    if n == 0 or n % k == 0:
        return 0.0
    return max(math.ceil(n / k) / n - 1 / k, 1 / k - math.floor(n / k) / n)


@dataclass(frozen=True)
class PositionFigure:
    split: str
    k: int
    n: int
    max_deviation: float
    allowed: float
    counts: dict[str, int]

    @property
    def passed(self) -> bool:
        return self.max_deviation <= self.allowed + 1e-9


def _single(df: pd.DataFrame) -> pd.Series:
    return (
        df.apply(lambda r: is_mcq(r) and len(answer_letters(r["answer"]) or []) == 1, axis=1)
        if len(df)
        else pd.Series(dtype=bool)
    )


def position_figures(df: pd.DataFrame, tolerance: float) -> list[PositionFigure]:
    """Per split and option count: answer-letter counts and deviation from uniform."""
    out: list[PositionFigure] = []
    if df.empty:
        return out
    rows = df[_single(df)]
    if rows.empty:
        return out
    k_of = rows["options"].map(len)
    for (split, k), g in rows.groupby([rows["split"], k_of], sort=True):
        pb = mcq.position_balance(g["answer"].tolist(), int(k))
        out.append(
            PositionFigure(
                str(split),
                int(k),
                pb.n,
                round(pb.max_deviation, 4),
                round(max(tolerance, achievable_deviation(pb.n, int(k))), 4),
                pb.counts,
            )
        )
    return out


def rebalance_positions(df: pd.DataFrame, tolerance: float, seed: object) -> tuple[pd.DataFrame, int]:
    """Re-shuffle the options of every (split, option count) group outside the tolerance.

    Positions come from ``mcq.balanced_positions`` (counts differ by at most one), the
    other options' order from ``mcq.shuffle_options`` seeded by the item id; option types
    move with their options. Returns the frame (``answer``, ``options``, ``option_types``,
    ``reshuffled`` updated) and the number of items re-shuffled.
    """
    out = df.copy()
    if "reshuffled" not in out:
        out["reshuffled"] = False
    failing = [(f.split, f.k) for f in position_figures(out, tolerance) if not f.passed]
    if not failing:
        return out, 0
    single = _single(out)
    k_of = out["options"].map(lambda o: len(o) if o is not None else 0)
    moved = 0
    for split, k in failing:
        mask = single & (out["split"] == split) & (k_of == k)
        plan = mcq.balanced_positions(out.loc[mask, "item_id"].tolist(), k, seed=(seed, split))
        for i in np.flatnonzero(mask.to_numpy()):
            row = out.iloc[i]
            opts = list(row["options"])
            types = lst(row["option_types"])
            ci = answer_letters(row["answer"])[0]
            # Shuffle option indices so any type labels (or none) stay aligned.
            sh = mcq.shuffle_options(
                opts,
                [str(j) for j in range(k)],
                seed=(seed, row["item_id"]),
                correct_type=str(ci),
                correct_position=plan[row["item_id"]],
            )
            order = [int(t) for t in sh.option_types]
            out.at[out.index[i], "options"] = sh.options
            out.at[out.index[i], "option_types"] = [types[j] for j in order] if types is not None else None
            new_answer = mcq.letter(sh.correct_index)
            if new_answer != row["answer"]:
                moved += 1
            out.at[out.index[i], "answer"] = new_answer
            out.at[out.index[i], "reshuffled"] = True
    return out, moved


def length_figure(df: pd.DataFrame) -> mcq.LengthBias:
    rows = df[_single(df)] if len(df) else df
    return mcq.length_bias((list(r["options"]), answer_letters(r["answer"])[0]) for _, r in rows.iterrows())


# -- blind solvability ------------------------------------------------------------------------


def render_options(options: Sequence[str]) -> str:
    return "\n".join(f"{mcq.letter(i)}. {o}" for i, o in enumerate(options))


def blind_requests(df: pd.DataFrame, prompt: Any, cfg: BlindConfig) -> list[LLMRequest]:
    """N text-only requests per multiple-choice item (no images); trials differ by seed.
    The variables are the same for every item shape, so the gold's cardinality never shows."""
    reqs: list[LLMRequest] = []
    for _, r in df.iterrows():
        if not is_mcq(r):
            continue
        opts = list(r["options"])
        letters = ", ".join(mcq.letter(i) for i in range(len(opts)))
        for t in range(cfg.trials):
            reqs.append(
                LLMRequest(
                    item_id=r["item_id"],
                    prompt=prompt,
                    variables={"question": r["question"], "options": render_options(opts), "letters": letters},
                    params={"temperature": cfg.temperature, "seed": t},
                )
            )
    return reqs


_LETTER = re.compile(r"^[A-Za-z]$")


def parse_letters(answer: Any) -> frozenset[int] | None:
    """The option letters in a reply (``"B"``, ``"b)"``, ``"A, C"``); None when unreadable."""
    if blank(answer):
        return None
    toks = [t.strip().strip(").:").strip() for t in re.split(r"[,\s/;]+", str(answer)) if t.strip()]
    toks = [t for t in toks if t]
    if not toks or not all(_LETTER.match(t) for t in toks):
        return None
    return frozenset(mcq.letter_index(t) for t in toks)


def chance_rate(k: int, multi: bool) -> float:
    return 1.0 / (2**k - 1) if multi else 1.0 / k


@dataclass(frozen=True)
class BlindScore:
    item_id: str
    trials: int
    correct: int
    failed: int  # calls that returned no answer (not counted as trials)
    chance: float
    p_value: float
    flagged: bool

    @property
    def accuracy(self) -> float:
        return self.correct / self.trials if self.trials else 0.0


def _trial_outcomes(
    df: pd.DataFrame, requests: Sequence[LLMRequest], results: Sequence[LLMResult]
) -> dict[str, dict[int, bool | None]]:
    """item_id → trial (seed) → right / wrong / None (the call returned no answer)."""
    rows = {r["item_id"]: r for _, r in df.iterrows()}
    out: dict[str, dict[int, bool | None]] = {}
    for req, res in zip(requests, results, strict=True):
        t = int(req.params.get("seed", 0))
        if not res.ok or res.data is None:
            out.setdefault(res.item_id, {})[t] = None
            continue
        got = parse_letters(res.data.get("answer"))
        gold = frozenset(answer_letters(rows[res.item_id]["answer"]) or [])
        out.setdefault(res.item_id, {})[t] = got == gold
    return out


def _item_chance(r: Any) -> float:
    return chance_rate(len(r["options"]), len(answer_letters(r["answer"]) or []) > 1)


def score_blind(
    df: pd.DataFrame,
    requests: Sequence[LLMRequest],
    results: Sequence[LLMResult],
    cfg: BlindConfig,
    units: dict[str, str] | None = None,
) -> dict[str, BlindScore]:
    """Per unit (``units``: item_id → unit id; default every item alone), keyed by item id:
    trials answered, correct, one-sided binomial p against chance, flagged.

    A pool's trial t is answered when every member answered trial t, right when every
    member was right; its chance is the product of its members' chances. Every member
    of a pool carries the pool's figures."""
    from scipy.stats import binomtest  # imported on use: scipy.stats is slow to import

    rows = {r["item_id"]: r for _, r in df.iterrows()}
    outcomes = _trial_outcomes(df, requests, results)
    units = units or {}
    members: dict[str, list[str]] = {}
    for item_id in outcomes:
        members.setdefault(units.get(item_id, item_id), []).append(item_id)
    out: dict[str, BlindScore] = {}
    for ids in members.values():
        trials = sorted({t for i in ids for t in outcomes[i]})
        n = c = failed = 0
        for t in trials:
            got = [outcomes[i].get(t) for i in ids]
            if any(g is None for g in got):
                failed += 1
                continue
            n += 1
            c += int(all(got))
        chance = float(np.prod([_item_chance(rows[i]) for i in ids]))
        p = float(binomtest(c, n, chance, alternative="greater").pvalue) if n else 1.0
        flagged = cfg.flags(c, n, chance)
        for i in ids:
            out[i] = BlindScore(i, n, c, failed, round(chance, 6), round(p, 6), flagged)
    return out


def guess_drop_table(df: pd.DataFrame, cfg: BlindConfig, units: dict[str, str] | None = None) -> dict[str, float]:
    """Chance that a pure guesser gets a unit flagged, per distinct unit chance (``k=4``,
    ``pool of 8`` ...): the test's false-positive rate, stated with every gate run."""
    units = units or {}
    rows = df[df.apply(is_mcq, axis=1)] if len(df) else df
    groups: dict[str, list[float]] = {}
    for _, r in rows.iterrows():
        groups.setdefault(units.get(r["item_id"], r["item_id"]), []).append(_item_chance(r))
    out: dict[str, float] = {}
    for chances in groups.values():
        if len(chances) == 1:
            label = f"k={round(1 / chances[0])}" if chances[0] > 0 else "k=?"
        else:
            label = f"pool of {len(chances)}"
        if label not in out:
            out[label] = round(cfg.guess_drop_probability(float(np.prod(chances))), 6)
    return dict(sorted(out.items()))


def whole_units(status: dict[str, tuple[str, str]], units: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Drop every member of a unit one of whose members is dropped (a gate never splits a
    unit); returns only the added drops, each naming the member that caused it."""
    dropped_units: dict[str, str] = {}
    for item_id in sorted(status):
        u = units.get(item_id)
        if u is not None and u not in dropped_units:
            dropped_units[u] = item_id
    added: dict[str, tuple[str, str]] = {}
    for item_id, u in units.items():
        if u in dropped_units and item_id not in status:
            cause = dropped_units[u]
            added[item_id] = ("unit_member_dropped", f"{u}: member {cause} was dropped ({status[cause][0]})")
    return added


def blind_accuracy(scores: Sequence[BlindScore]) -> float:
    """Accuracy over all trials of the given items (0 when none)."""
    n = sum(s.trials for s in scores)
    return round(sum(s.correct for s in scores) / n, 4) if n else 0.0
