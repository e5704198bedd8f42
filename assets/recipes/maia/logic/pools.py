"""Pool post-processing shared by answers (App. A.4) and true statements (App. A.6).

Per pool: equal strings are rephrased (Fig. 10A), then every member sharing more than
``threshold`` of its word types with another member is rephrased against the others
(Fig. 10B), for at most ``max_rounds`` rounds; whatever is still equal / overlapping after
that is dropped with its reason. Statistics before and after are kept per pool.

The rephrasing itself is a callback (the asset batches one engine call per round across
every pool of the partition), so this module stays pure and testable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from forge.checks.text import canonical, overlap_with_others, pool_overlap, pool_stats


@dataclass
class RephraseTask:
    pool_key: str
    member_id: str
    kind: str  # "equal" | "overlap"
    text: str
    others: list[str]  # the other members of the pool as they are now
    round: int
    context: dict[str, Any]  # e.g. the question


@dataclass
class Pool:
    key: str
    member_ids: list[str]
    texts: list[str]
    context: dict[str, Any] = field(default_factory=dict)
    originals: list[str] = field(default_factory=list)
    rephrased: dict[int, int] = field(default_factory=dict)  # index → times rephrased
    dropped: dict[int, str] = field(default_factory=dict)  # index → reason
    stats_before: dict[str, Any] = field(default_factory=dict)
    stats_after: dict[str, Any] = field(default_factory=dict)
    rounds: int = 0

    def __post_init__(self) -> None:
        if not self.originals:
            self.originals = list(self.texts)

    def alive(self) -> list[int]:
        return [i for i in range(len(self.texts)) if i not in self.dropped]

    def kept_texts(self) -> list[str]:
        return [self.texts[i] for i in self.alive()]


def pending(pool: Pool, threshold: float, method: str = "jaccard", lang: str = "en") -> list[tuple[int, str]]:
    """(index, kind) of members to rephrase now: later duplicates first, then overlap offenders."""
    alive = pool.alive()
    texts = [pool.texts[i] for i in alive]
    out: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for k, t in enumerate(texts):
        c = canonical(t)
        if c in seen:
            out.append((alive[k], "equal"))
        else:
            seen[c] = k
    dup = {i for i, _ in out}
    ov = pool_overlap(texts, threshold, method=method, lang=lang)
    for k in ov.offenders():
        if alive[k] not in dup:
            out.append((alive[k], "overlap"))
    return out


def postprocess_pools(
    pools: Sequence[Pool],
    rephrase: Callable[[list[RephraseTask]], list[str | None]],
    *,
    threshold: float = 0.5,
    max_rounds: int = 3,
    method: str = "jaccard",
    on_result: Callable[[RephraseTask, str | None, bool], None] | None = None,
    drop_unresolved: bool = True,
    lang: str = "en",
) -> None:
    """Run the equal-strings / lexical-overlap rephrase rounds in place on ``pools``.

    ``on_result(task, new_text, accepted)`` is called for every rephrase (for attempt rows);
    a rephrase is accepted when it differs from every other member and its overlap with
    each of them is ≤ ``threshold``; a rejected one is retried next round.
    ``drop_unresolved=False`` keeps what is still equal/overlapping after the last round
    (for placeholder text from the offline stub, which no rephrasing can diversify).
    ``lang`` selects tokenisation and function words (``forge.checks.text``; MAIA's own
    pools are Italian).
    """
    for p in pools:
        p.stats_before = pool_stats(p.kept_texts(), threshold, method, lang)
    for rnd in range(1, max_rounds + 1):
        tasks: list[RephraseTask] = []
        for p in pools:
            for i, kind in pending(p, threshold, method, lang):
                others = [p.texts[j] for j in p.alive() if j != i]
                tasks.append(RephraseTask(p.key, p.member_ids[i], kind, p.texts[i], others, rnd, p.context))
        if not tasks:
            break
        outs = rephrase(tasks)
        by_key = {p.key: p for p in pools}
        for task, new in zip(tasks, outs, strict=True):
            p = by_key[task.pool_key]
            i = p.member_ids.index(task.member_id)
            accepted = False
            if new and new.strip():
                trial = list(p.texts)
                trial[i] = new.strip()
                alive = p.alive()
                k = alive.index(i)
                texts = [trial[j] for j in alive]
                accepted = (
                    canonical(new) not in {canonical(t) for j, t in enumerate(texts) if j != k}
                    and overlap_with_others(texts, k, method=method, lang=lang) <= threshold
                )
                # keep even a partial improvement: the next round starts from it
                p.texts[i] = new.strip()
                p.rephrased[i] = p.rephrased.get(i, 0) + 1
            p.rounds = rnd
            if on_result:
                on_result(task, new, accepted)
    for p in pools:
        for i, kind in pending(p, threshold, method, lang) if drop_unresolved else []:
            p.dropped[i] = "equal_unresolved" if kind == "equal" else "overlap_unresolved"
        p.stats_after = pool_stats(p.kept_texts(), threshold, method, lang)
