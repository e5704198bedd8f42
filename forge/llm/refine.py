"""The validate-and-refine loop (ViMU App. A, Stage 4), reusable by every recipe.

Round 0 generates every item; each output is validated by programmatic checks and/or an
LLM judge (all batched through the engine). The verdict decides:

* ``pass`` / ``minor`` → accepted as is;
* ``reject``           → discarded;
* ``major``            → regenerated with the feedback (the previous output and the
  feedback appended as extra turns, or a recipe's own ``revise`` request), up to
  ``max_rounds`` refinement rounds (K = 3 in ViMU); still ``major`` after K → rejected.

So an item costs at most K + 1 generations and K + 1 judge calls. A failed generation or
judge call rejects the item with its reason; nothing is ever filled in. Every generation,
check and judge verdict is an attempt row (``RefineRun.attempts_frame()``), written by the
asset to the shared ``llm_attempts`` table (see ``assets.llm_support.record_llm_attempts``).

Stub output (``forge.llm.stub.advisory``): when the generation or the judge reply was made by
the offline stub backend, every check and judge verdict on it, including a crashed check or an
unreadable/failed judge reply, is recorded as its attempt row with ``advisory = True`` and then
treated as ``pass``: the item is accepted in the round it was generated, and
``RefineOutcome.advisory`` keeps the verdict it would have had. Real backends never take this path.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from forge.llm.engine import LLMEngine
from forge.llm.stub import advisory as is_advisory
from forge.llm.types import LLMRequest, LLMResult

LABELS = ("pass", "minor", "major", "reject")
_RANK = {label: i for i, label in enumerate(LABELS)}
ATTEMPT_COLUMNS = ["stage", "partition", "item_id", "round", "step", "prompt_name", "prompt_hash", "model",
                   "backend", "ok", "cached", "verdict", "feedback", "output", "error", "advisory", "final_status"]


@dataclass(frozen=True)
class Verdict:
    label: str                      # pass | minor | major | reject
    feedback: str = ""
    source: str = "judge"           # "judge" or the check's name

    def __post_init__(self) -> None:
        if self.label not in _RANK:
            raise ValueError(f"verdict label must be one of {LABELS}, not {self.label!r}")


def worst(verdicts: Sequence[Verdict | None]) -> Verdict:
    found = [v for v in verdicts if v is not None]
    if not found:
        return Verdict("pass", source="none")
    top = max(found, key=lambda v: _RANK[v.label])
    feedback = "\n".join(f"- [{v.source}] {v.feedback}" for v in found if v.feedback and _RANK[v.label] >= 1)
    return Verdict(top.label, feedback or top.feedback, top.source)


def verdict_from_judge(data: dict[str, Any]) -> Verdict:
    """Default reading of a judge reply: ``{"verdict": "pass|minor|major|reject", "feedback": "..."}``.

    Synonyms ``minor_revision``/``major_revision`` are accepted (ViMU's wording).
    """
    raw = str(data.get("verdict", "")).strip().lower().replace(" ", "_")
    label = {"minor_revision": "minor", "major_revision": "major", "accept": "pass"}.get(raw, raw)
    return Verdict(label, str(data.get("feedback", "") or ""), "judge")


def revise_with_feedback(request: LLMRequest, output: dict[str, Any], verdict: Verdict) -> LLMRequest:
    """Next round's request: the same prompt, plus the previous output and the reviewer's feedback."""
    turns = [
        {"role": "assistant", "content": json.dumps(output, ensure_ascii=False)},
        {"role": "user", "content": (
            "A reviewer asked for a major revision of your answer. Feedback:\n"
            f"{verdict.feedback or '(none given)'}\n\nWrite a revised answer that fixes these problems, "
            "in the same JSON format.")},
    ]
    return replace(request, extra_messages=list(request.extra_messages) + turns)


Check = Callable[[LLMRequest, dict[str, Any]], "Verdict | None"]
JudgeBuilder = Callable[[LLMRequest, dict[str, Any]], LLMRequest]
Reviser = Callable[[LLMRequest, dict[str, Any], Verdict], LLMRequest]


@dataclass
class RefineOutcome:
    item_id: str
    status: str                     # accepted | rejected
    data: dict[str, Any] | None     # the accepted output
    result: LLMResult | None        # the accepted generation's LLMResult (prompt hash, model, backend)
    verdict: Verdict | None
    rounds: int                     # refinement rounds used (0 = accepted or rejected at first validation)
    reason: str | None = None       # reject reason code: generation_failed | judge_failed | verdict_reject | max_rounds
    detail: str | None = None
    attempts: list[dict[str, Any]] = field(default_factory=list)
    # Stub output only: the verdict the item would have had (recorded, not applied; ``pass`` when
    # nothing objected); None for real backends.
    advisory: Verdict | None = None

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"


@dataclass
class RefineRun:
    stage: str
    partition: str
    outcomes: list[RefineOutcome]

    def accepted(self) -> list[RefineOutcome]:
        return [o for o in self.outcomes if o.accepted]

    def rejected(self) -> list[RefineOutcome]:
        return [o for o in self.outcomes if not o.accepted]

    def attempts_frame(self) -> pd.DataFrame:
        rows = [dict(a, final_status=o.status) for o in self.outcomes for a in o.attempts]
        df = pd.DataFrame(rows, columns=ATTEMPT_COLUMNS)
        df["advisory"] = df["advisory"].fillna(False).astype(bool)
        return df

    def add_rejects(self, log: Any) -> None:
        """Record rejected items in a ``forge.storage.RejectLog``."""
        for o in self.rejected():
            log.add(o.item_id, f"refine_{o.reason}", "RefineReject", o.detail or "")


def refine(
    engine: LLMEngine,
    stage: str,
    partition: str,
    requests: list[LLMRequest],
    *,
    checks: Sequence[Check] = (),
    judge: JudgeBuilder | None = None,
    parse_verdict: Callable[[dict[str, Any]], Verdict] = verdict_from_judge,
    revise: Reviser = revise_with_feedback,
    max_rounds: int = 3,
) -> RefineRun:
    """Run generate → validate → verdict → regenerate for ``requests`` (item ids unique)."""
    n = len(requests)
    outcomes: list[RefineOutcome | None] = [None] * n
    attempts: list[list[dict[str, Any]]] = [[] for _ in range(n)]
    current = list(requests)
    active = list(range(n))

    def row(i: int, rnd: int, step: str, res: LLMResult | None, *, ok: bool, verdict: Verdict | None = None,
            output: Any = None, error: str | None = None, advisory: bool = False) -> dict[str, Any]:
        return {
            "stage": stage, "partition": partition, "item_id": str(requests[i].item_id), "round": rnd, "step": step,
            "prompt_name": res.prompt_name if res else "", "prompt_hash": res.prompt_hash if res else "",
            "model": res.model if res else "", "backend": res.backend if res else engine.backend_name,
            "ok": ok, "cached": bool(res.cached) if res else False, "verdict": verdict.label if verdict else None,
            "feedback": verdict.feedback if verdict else None,
            "output": json.dumps(output, ensure_ascii=False) if output is not None else None, "error": error,
            "advisory": advisory,
        }

    def finish(i: int, status: str, rnd: int, *, data=None, result=None, verdict=None, reason=None, detail=None,
               would_be=None):
        outcomes[i] = RefineOutcome(str(requests[i].item_id), status, data, result, verdict, rnd, reason, detail,
                                    attempts[i], would_be)

    for rnd in range(max_rounds + 1):
        if not active:
            break
        gens = engine.run(stage, partition, [current[i] for i in active])
        produced: list[tuple[int, LLMResult]] = []
        for i, res in zip(active, gens):
            attempts[i].append(row(i, rnd, "generate", res, ok=res.ok, output=res.data, error=res.error))
            if res.ok:
                produced.append((i, res))
            else:
                finish(i, "rejected", rnd, reason="generation_failed", detail=res.error)
        verdicts: dict[int, list[Verdict | None]] = {i: [] for i, _ in produced}
        # Verdicts on stub output: recorded (attempt rows flagged advisory), never applied.
        held: dict[int, list[Verdict | None]] = {i: [] for i, _ in produced}
        flagged: set[int] = set()
        for i, res in produced:
            adv = is_advisory(res)
            if adv:
                flagged.add(i)
            for check in checks:
                name = getattr(check, "__name__", "check")
                try:
                    v = check(current[i], res.data or {})
                except Exception as exc:  # noqa: BLE001 - a crashing check rejects its item only
                    v = Verdict("reject", f"check crashed: {type(exc).__name__}: {exc}", name)
                if v is not None:
                    v = v if v.source not in ("judge", "none") else replace(v, source=name)
                    attempts[i].append(row(i, rnd, f"check:{name}", None, ok=True, verdict=v, advisory=adv))
                (held if adv else verdicts)[i].append(v)
        need_judge = [(i, res) for i, res in produced if judge is not None
                      and worst(verdicts[i]).label not in ("major", "reject")]
        if need_judge:
            judged = engine.run(stage, partition, [judge(current[i], res.data or {}) for i, res in need_judge])
            for (i, res), jres in zip(need_judge, judged):
                adv = is_advisory(res) or is_advisory(jres)
                if adv:
                    flagged.add(i)
                sink = held if adv else verdicts
                if not jres.ok:
                    attempts[i].append(row(i, rnd, "judge", jres, ok=False, error=jres.error, advisory=adv))
                    sink[i].append(Verdict("reject", f"judge failed: {jres.error}", "judge_error"))
                    continue
                try:
                    v = parse_verdict(jres.data or {})
                except ValueError as exc:
                    attempts[i].append(row(i, rnd, "judge", jres, ok=False, output=jres.data, error=str(exc),
                                           advisory=adv))
                    sink[i].append(Verdict("reject", f"judge verdict unreadable: {exc}", "judge_error"))
                    continue
                attempts[i].append(row(i, rnd, "judge", jres, ok=True, verdict=v, output=jres.data, advisory=adv))
                sink[i].append(v)
        next_active = []
        for i, res in produced:
            v = worst(verdicts[i])
            would_be = worst(held[i]) if i in flagged else None
            if v.source == "judge_error":
                finish(i, "rejected", rnd, verdict=v, reason="judge_failed", detail=v.feedback)
            elif v.label in ("pass", "minor"):
                finish(i, "accepted", rnd, data=res.data, result=res, verdict=v, would_be=would_be)
            elif v.label == "reject":
                finish(i, "rejected", rnd, verdict=v, reason="verdict_reject", detail=v.feedback)
            elif rnd >= max_rounds:
                finish(i, "rejected", rnd, verdict=v, reason="max_rounds",
                       detail=f"still major after {max_rounds} refinement rounds: {v.feedback}")
            else:
                current[i] = revise(current[i], res.data or {}, v)
                next_active.append(i)
        active = next_active
    return RefineRun(stage, partition, [o for o in outcomes if o is not None])
