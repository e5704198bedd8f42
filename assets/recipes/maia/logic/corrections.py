"""A corrected answer rebuilds its pair (issue #54; App. A.4–A.8), Dagster-free.

A reviewer who corrects answer j of a pool (the open question's reference j, ``forge/review/units.py``
parts) changes what the pool's pair j was built from. The correction goes back through the stages
that built the pair, each with its own checks, and nothing else of the pool moves:

* ``maia_answer_pools`` builds the pool as before (the same requests: the cache's replies), then puts
  the person's text in slot j (``origin = reviewer``, ``corrected_from`` = the text it replaces) and
  runs the answer stage's consistency check on it (Fig. 9A; a person's text is checked, never
  regenerated: score 0 or a failed call flags it) and the pool's lexical-overlap rule against the
  other 7 (Fig. 10; flagged, not rephrased: a person's text is not rewritten);
* ``maia_statements`` builds the pool from the texts the stage first had (``corrected_from``), so every
  other statement, its rephrases included, is the cached one, then regenerates statement j alone from
  the corrected answer with the stage's own checks (language, declarative form, fresh draws) and the
  overlap rule against the other statements (flagged when it fails);
* ``maia_foils`` asks for foil j because its statement changed (a new request; every other foil's is
  the cached one), through the stage's own refine loop: minimal edit, NLI contradiction, structural
  judge, fresh draws.

A check that fails flags the member (``review``), and the pool's items say so (``extra.review``): the
pair goes back to review with its new revision (its old verdicts stale, ``item_changed``), so under
the ``required`` policy the pool is exported only once a person accepts the rebuilt pair.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from forge.checks.text import canonical, overlap_with_others
from forge.llm.types import LLMRequest

from . import pool_flow as PF

OPEN = "open_ended"


def corrected_answers(edits: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, dict[int, str]]:
    """question id → {position in the open question's references: the corrected text} from the
    applied edits (oldest first: a later correction of the same answer wins)."""
    out: dict[str, dict[int, str]] = {}
    for item, edit in edits:
        refs = edit.get("references")
        if item.get("task") != OPEN or refs is None:
            continue
        labels = item.get("labels")
        qid = (json.loads(labels) if isinstance(labels, str) and labels else dict(labels or {})).get("question_id")
        if qid is None:
            continue
        pairs = refs.items() if isinstance(refs, dict) else enumerate(refs)
        for j, text in pairs:
            out.setdefault(str(qid), {})[int(j)] = str(text).strip()
    return out


def by_member(corrected: dict[int, str], alive: list[int], texts: list[str]) -> dict[int, str]:
    """Pool member index → corrected text: reference j is the j-th member with text (the open
    question lists them in index order); a correction equal to what the stage built changes nothing."""
    return {alive[j]: t for j, t in sorted(corrected.items()) if 0 <= j < len(alive) and t and t != texts[alive[j]]}


def overlap_problem(texts: list[str], alive: list[int], i: int, threshold: float, method: str, lang: str) -> str | None:
    """The pool's lexical rule (Fig. 10A/B) for member ``i`` alone: equal to another member, or
    overlapping one above ``threshold``; None when it passes."""
    kept = [texts[k] for k in alive]
    k = alive.index(i)
    if canonical(texts[i]) in {canonical(t) for n, t in enumerate(kept) if n != k}:
        return f"equal_unresolved: {texts[i]}"
    if overlap_with_others(kept, k, method=method, lang=lang) > threshold:
        return f"overlap_unresolved: {texts[i]}"
    return None


def _lexical(pcfg: dict[str, Any]) -> tuple[float, str]:
    return float(pcfg["overlap_threshold"]), str(pcfg.get("overlap_method", "jaccard"))


def correct_answers(
    engine: Any,
    stage: str,
    batch: str,
    q: dict[str, Any],
    prompts: PF.PoolPrompts,
    pcfg: dict[str, Any],
    out: PF.PoolOutcome,
    corrected: dict[int, str],
) -> dict[int, str]:
    """Put a reviewer's corrected answers into the built pool ``out`` and check each with the answer
    stage's consistency check and the pool's lexical rule; member -> the text it replaced."""
    p = out.pool
    fixes = by_member(corrected, p.alive(), p.texts) if out.status == "kept" else {}
    was = {i: p.texts[i] for i in fixes}
    for i, text in fixes.items():
        p.texts[i] = p.originals[i] = text
        for d in (p.rephrased, out.review, out.made_by, out.regenerated, out.scores):
            d.pop(i, None)  # what the stage did to the replaced text is not this text's
    if fixes:
        PF.check_people(engine, stage, batch, q, prompts, p.member_ids, fixes, out)
    threshold, method = _lexical(pcfg)
    for i in fixes:
        why = overlap_problem(p.texts, p.alive(), i, threshold, method, prompts.lang)
        if why and i not in out.review:
            out.review[i] = why[:500]
    return was


def correct_statements(
    engine: Any,
    stage: str,
    batch: str,
    q: dict[str, Any],
    answers: list[dict[str, Any]],
    prompts: PF.PoolPrompts,
    cfg: dict[str, Any],
    pcfg: dict[str, Any],
    out: PF.PoolOutcome,
    redo: set[int] | None = None,
    adjust: Callable[[list[LLMRequest]], list[LLMRequest]] | None = None,
) -> list[int]:
    """Regenerate, in the statement pool ``out`` built from the stage's first texts, the statement of
    every corrected answer (``corrected_from`` set) from its corrected text, with the stage's own
    checks (a pool of one through ``build_statement_pool``) and the pool's lexical rule against the
    other statements; the other members are left as built. ``redo``: members a reviewer's reject sends
    back to this stage (asked again alone, their requests moved by ``adjust``: a new seed). Returns
    the members regenerated."""
    fixed = sorted({k for k, a in enumerate(answers) if isinstance(a.get("corrected_from"), str)} | (redo or set()))
    if out.status != "kept":
        return []
    p = out.pool
    threshold, method = _lexical(pcfg)
    for k in fixed:
        one = PF.build_statement_pool(engine, stage, batch, q, [answers[k]], prompts, cfg, pcfg, 1, adjust)
        out.member_rejects += one.member_rejects
        last = max((int(d["round"].max()) for d in out.attempts if len(d) and "round" in d), default=-1)
        out.attempts += [PF._shift_rounds(d, last + 1) for d in one.attempts]  # after the first build's rounds
        for d in (p.rephrased, out.review, out.made_by, out.regenerated, out.results):
            d.pop(k, None)
        text = one.pool.texts[0] if one.status == "kept" else ""
        if not text:  # no draw gave any text: a gap of the pool, as the stage leaves one
            p.dropped[k] = "no_text"
            out.review[k] = f"statement_invalid: no statement from the corrected answer ({one.detail or ''})"[:500]
            continue
        p.dropped.pop(k, None)
        p.texts[k] = p.originals[k] = text
        out.results[k] = one.results.get(0)
        if 0 in one.made_by:
            out.made_by[k] = one.made_by[0]
        out.regenerated[k] = one.regenerated.get(0, 0)
        why = one.review.get(0) or overlap_problem(p.texts, p.alive(), k, threshold, method, prompts.lang)
        if why:
            out.review[k] = why[:500]
    return fixed
