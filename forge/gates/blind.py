"""The text-only ("blind") probe: what a model answers with the question and options alone.

No paper drops items on it (each paper's practice, with its section, is in its spec and
assets/recipes/<paper>/README.md: text-only accuracy or a unimodal baseline is reported, never filtered on). So the probe
*reports* by default (per item in ``gate_results`` / ``gated_items`` / the export, per task, split
and category on the card); dropping what it flags is the named opt-in ``blind.action: drop``.

Its cost follows what it tells:

* **early stop** — trials are asked in rounds (trial 0 of every open unit, then trial 1 ...), and a
  unit leaves once its verdict (flagged or not) can no longer change (``BlindConfig.decided``);
* **one probe per text** — items with the same question and options share one request per trial,
  and every request goes through the engine's content-keyed cache, so an item is never probed
  twice for the same model and text (a re-run, or the same text under another id, costs nothing).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from forge.gates.checks import BlindScore, render_options, score_blind
from forge.items.fields import is_mcq
from forge.llm.types import LLMRequest, LLMResult
from forge.provenance.versioning import content_hash
from forge.splits.config import BlindConfig


def text_key(row: Any) -> str:
    """What the text-only model sees of an item: its question and options (in shown order)."""
    return content_hash(str(row["question"]), [str(o) for o in row["options"]], length=16)


def blind_request(row: Any, prompt: Any, cfg: BlindConfig, trial: int) -> LLMRequest:
    """Trial ``trial`` of one item, text only; the variables never show how many options are right."""
    opts = list(row["options"])
    letters = ", ".join(chr(65 + i) for i in range(len(opts)))
    return LLMRequest(
        item_id=str(row["item_id"]),
        prompt=prompt,
        variables={"question": row["question"], "options": render_options(opts), "letters": letters},
        params={"temperature": cfg.temperature, "seed": trial},
    )


@dataclass
class Probe:
    scores: dict[str, BlindScore] = field(default_factory=dict)  # item_id → its unit's figures
    sent: int = 0  # requests handed to the engine (cache hits included)
    planned: int = 0  # requests without early stopping and text sharing (distinct items × trials)
    texts: int = 0  # distinct texts probed
    backend: str | None = None
    model: str | None = None
    prompt_hash: str | None = None

    @property
    def saved(self) -> int:
        return max(0, self.planned - self.sent)


def _open_units(members: dict[str, list[str]], scores: dict[str, BlindScore], cfg: BlindConfig, asked: int) -> set:
    remaining = cfg.trials - asked
    out = set()
    for unit, ids in members.items():
        s = scores[ids[0]]
        if not cfg.early_stop or not cfg.decided(s.correct, s.trials, remaining, s.chance):
            out.add(unit)
    return out


def probe(
    engine: Any,
    stage: str,
    partition: str,
    df: pd.DataFrame,
    prompt: Any,
    cfg: BlindConfig,
    units: dict[str, str] | None = None,
) -> Probe:
    """Probe the multiple-choice items of ``df`` (``units``: item_id → pool id for pool verdicts)."""
    rows = df[df.apply(is_mcq, axis=1)].sort_values("item_id") if len(df) else df
    out = Probe()
    if rows.empty:
        return out
    units = units or {}
    by_id = {str(r["item_id"]): r for _, r in rows.iterrows()}
    key_of = {i: text_key(r) for i, r in by_id.items()}
    rep: dict[str, Any] = {}
    for i in sorted(by_id):
        rep.setdefault(key_of[i], by_id[i])
    members: dict[str, list[str]] = {}
    for i in sorted(by_id):
        members.setdefault(units.get(i, i), []).append(i)
    out.texts, out.planned = len(rep), len(by_id) * cfg.trials
    replies: dict[tuple[str, int], LLMResult] = {}
    reqs: list[LLMRequest] = []
    results: list[LLMResult] = []
    open_units = set(members)
    for t in range(cfg.trials):
        need = sorted({key_of[i] for u in open_units for i in members[u]} - {k for k, tt in replies if tt == t})
        sent = engine.run(stage, partition, [blind_request(rep[k], prompt, cfg, t) for k in need])
        replies |= {(k, t): res for k, res in zip(need, sent, strict=True)}
        out.sent += len(need)
        for u in sorted(open_units):  # every member of an open unit gets trial t (shared texts: one reply)
            for i in members[u]:
                reqs.append(blind_request(by_id[i], prompt, cfg, t))
                results.append(dataclasses.replace(replies[(key_of[i], t)], item_id=i))
        out.scores = score_blind(rows, reqs, results, cfg, units)
        open_units = _open_units({u: members[u] for u in open_units}, out.scores, cfg, t + 1)
        if not open_units:
            break
    first = next((r for r in results if r.ok), results[0] if results else None)
    if first is not None:
        out.backend, out.model, out.prompt_hash = first.backend, first.model, first.prompt_hash
    return out


def accuracy_table(res: pd.DataFrame, items: pd.DataFrame | None = None) -> pd.DataFrame:
    """Blind accuracy overall and per task, split and category (``slice``: ``all``, ``task=mcq``,
    ``category=irony`` ...), from ``gate_results`` rows (``items``: gated items, for the task).
    Columns: items probed, trials, correct, accuracy, chance (mean per trial), flagged."""
    b = res[res["blind_trials"].notna() & (res["blind_trials"] > 0)].copy() if len(res) else res
    if b is None or b.empty:
        return pd.DataFrame()
    if items is not None and "task" in items and len(items):
        b = b.merge(items[["item_id", "task"]].drop_duplicates("item_id"), on="item_id", how="left")
    rows = [("all", b)]
    for col in ("task", "split", "category"):
        if col in b:
            for val, g in b.groupby(b[col].fillna("(none)").astype(str), sort=True):
                rows.append((f"{col}={val}", g))
    out = []
    for name, g in rows:
        n = float(g["blind_trials"].sum())
        out.append(
            {
                "slice": name,
                "items": len(g),
                "trials": int(n),
                "correct": int(g["blind_correct"].sum()),
                "accuracy": round(float(g["blind_correct"].sum()) / n, 4) if n else 0.0,
                "chance": round(float((g["blind_chance"] * g["blind_trials"]).sum()) / n, 4) if n else 0.0,
                "flagged": int(g["blind_flagged"].fillna(False).astype(bool).sum()),
            }
        )
    return pd.DataFrame(out)
