"""The validate-and-refine loop (ViMU App. A, Stage 4), reusable by every recipe.

Each item flows on its own (no rounds across items): it is generated; its output is validated
by programmatic checks (run concurrently in the engine's check threads) and/or an LLM judge;
as soon as its verdict is known it is accepted, discarded or regenerated. The verdict decides:

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

import asyncio
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from forge.llm.engine import LLMEngine
from forge.llm.progress import _check_ctx, _Progress
from forge.llm.stub import advisory as is_advisory
from forge.llm.types import LLMRequest, LLMResult

LABELS = ("pass", "minor", "major", "reject")
_RANK = {label: i for i, label in enumerate(LABELS)}
ATTEMPT_COLUMNS = [
    "stage",
    "partition",
    "item_id",
    "round",
    "step",
    "prompt_name",
    "prompt_hash",
    "model",
    "backend",
    "ok",
    "cached",
    "verdict",
    "feedback",
    "output",
    "error",
    "advisory",
    "final_status",
]


@dataclass(frozen=True)
class Verdict:
    label: str  # pass | minor | major | reject
    feedback: str = ""
    source: str = "judge"  # "judge" or the check's name

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
        {
            "role": "user",
            "content": (
                "A reviewer asked for a major revision of your answer. Feedback:\n"
                f"{verdict.feedback or '(none given)'}\n\nWrite a revised answer that fixes these problems, "
                "in the same JSON format."
            ),
        },
    ]
    return replace(request, extra_messages=list(request.extra_messages) + turns)


Check = Callable[[LLMRequest, dict[str, Any]], "Verdict | None"]
JudgeBuilder = Callable[[LLMRequest, dict[str, Any]], LLMRequest]
Reviser = Callable[[LLMRequest, dict[str, Any], Verdict], LLMRequest]


@dataclass
class RefineOutcome:
    item_id: str
    status: str  # accepted | rejected
    data: dict[str, Any] | None  # the accepted output
    result: LLMResult | None  # the accepted generation's LLMResult (prompt hash, model, backend)
    verdict: Verdict | None
    rounds: int  # refinement rounds used (0 = accepted or rejected at first validation)
    reason: str | None = None  # reject reason code: generation_failed | judge_failed | verdict_reject | max_rounds
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
    """Run generate → validate → verdict → regenerate for ``requests`` (item ids unique).

    Each item flows on its own: its checks start when its generation returns, its judge call
    when its checks are done, its next round when its verdict is known; no item waits for
    another item's slow call. All items share the engine's concurrency budget."""
    return engine.wait(
        arefine(
            engine,
            stage,
            partition,
            requests,
            checks=checks,
            judge=judge,
            parse_verdict=parse_verdict,
            revise=revise,
            max_rounds=max_rounds,
        )
    )


def _attempt_row(
    stage: str,
    partition: str,
    item_id: str,
    backend: str,
    rnd: int,
    step: str,
    res: LLMResult | None,
    *,
    ok: bool,
    verdict: Verdict | None = None,
    output: Any = None,
    error: str | None = None,
    advisory: bool = False,
) -> dict[str, Any]:
    """One row of an item's attempt log (a generation, a check's verdict, a judge call)."""
    return {
        "stage": stage,
        "partition": partition,
        "item_id": item_id,
        "round": rnd,
        "step": step,
        "prompt_name": res.prompt_name if res else "",
        "prompt_hash": res.prompt_hash if res else "",
        "model": res.model if res else "",
        "backend": res.backend if res else backend,
        "ok": ok,
        "cached": bool(res.cached) if res else False,
        "verdict": verdict.label if verdict else None,
        "feedback": verdict.feedback if verdict else None,
        "output": json.dumps(output, ensure_ascii=False) if output is not None else None,
        "error": error,
        "advisory": advisory,
    }


async def arefine(
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
    """``refine`` on the engine's loop (await it from code already running there)."""
    loop = asyncio.get_running_loop()
    n = len(requests)
    outcomes: list[RefineOutcome | None] = [None] * n
    attempts: list[list[dict[str, Any]]] = [[] for _ in range(n)]
    # Checks run in the engine's check threads. Calls of one check are serialized (a check may
    # hold a model that is not thread-safe, e.g. an embedder), except while it waits on the
    # engine (engine.run releases the lock), so LLM-backed checks such as NLI overlap.
    locks = [threading.Lock() for _ in checks]
    progress = _Progress(f"{stage} {partition} (refine, items)", n, engine.settings.progress_every_s)
    progress.status = engine.status

    def row(i: int, rnd: int, step: str, res: LLMResult | None, **kw: Any) -> dict[str, Any]:
        return _attempt_row(stage, partition, str(requests[i].item_id), engine.backend_name, rnd, step, res, **kw)

    def finish(
        i: int, status: str, rnd: int, *, data=None, result=None, verdict=None, reason=None, detail=None, would_be=None
    ):
        outcomes[i] = RefineOutcome(
            str(requests[i].item_id), status, data, result, verdict, rnd, reason, detail, attempts[i], would_be
        )

    async def run_check(k: int, req: LLMRequest, data: dict[str, Any]) -> Verdict | None:
        check, name = checks[k], getattr(checks[k], "__name__", "check")

        def call() -> Verdict | None:
            with locks[k]:
                _check_ctx.lock = locks[k]
                try:
                    return check(req, data)
                finally:
                    _check_ctx.lock = None

        try:
            v = await loop.run_in_executor(engine.check_pool, call)
        except Exception as exc:  # noqa: BLE001 - a crashing check rejects its item only
            v = Verdict("reject", f"check crashed: {type(exc).__name__}: {exc}", name)
        if v is not None and v.source in ("judge", "none"):
            v = replace(v, source=name)
        return v

    async def one(i: int) -> None:
        current = requests[i]
        try:
            for rnd in range(max_rounds + 1):
                res = await engine.acall(stage, partition, current)
                attempts[i].append(row(i, rnd, "generate", res, ok=res.ok, output=res.data, error=res.error))
                if not res.ok:
                    finish(i, "rejected", rnd, reason="generation_failed", detail=res.error)
                    return
                # Verdicts on stub output: recorded (attempt rows flagged advisory), never applied.
                verdicts: list[Verdict | None] = []
                held: list[Verdict | None] = []
                adv = flagged = is_advisory(res)
                found = await asyncio.gather(*(run_check(k, current, res.data or {}) for k in range(len(checks))))
                for k, v in enumerate(found):
                    if v is not None:
                        attempts[i].append(
                            row(
                                i,
                                rnd,
                                f"check:{getattr(checks[k], '__name__', 'check')}",
                                None,
                                ok=True,
                                verdict=v,
                                advisory=adv,
                            )
                        )
                    (held if adv else verdicts).append(v)
                if judge is not None and worst(verdicts).label not in ("major", "reject"):
                    jres = await engine.acall(stage, partition, judge(current, res.data or {}))
                    jadv = adv or is_advisory(jres)
                    flagged = flagged or jadv
                    sink = held if jadv else verdicts
                    if not jres.ok:
                        attempts[i].append(row(i, rnd, "judge", jres, ok=False, error=jres.error, advisory=jadv))
                        sink.append(Verdict("reject", f"judge failed: {jres.error}", "judge_error"))
                    else:
                        try:
                            v = parse_verdict(jres.data or {})
                        except ValueError as exc:
                            attempts[i].append(
                                row(i, rnd, "judge", jres, ok=False, output=jres.data, error=str(exc), advisory=jadv)
                            )
                            sink.append(Verdict("reject", f"judge verdict unreadable: {exc}", "judge_error"))
                        else:
                            attempts[i].append(
                                row(i, rnd, "judge", jres, ok=True, verdict=v, output=jres.data, advisory=jadv)
                            )
                            sink.append(v)
                v = worst(verdicts)
                would_be = worst(held) if flagged else None
                if v.source == "judge_error":
                    finish(i, "rejected", rnd, verdict=v, reason="judge_failed", detail=v.feedback)
                elif v.label in ("pass", "minor"):
                    finish(i, "accepted", rnd, data=res.data, result=res, verdict=v, would_be=would_be)
                elif v.label == "reject":
                    finish(i, "rejected", rnd, verdict=v, reason="verdict_reject", detail=v.feedback)
                elif rnd >= max_rounds:
                    finish(
                        i,
                        "rejected",
                        rnd,
                        verdict=v,
                        reason="max_rounds",
                        detail=f"still major after {max_rounds} refinement rounds: {v.feedback}",
                    )
                else:
                    current = revise(current, res.data or {}, v)
                    continue
                return
        finally:
            progress.step()

    ticker = progress.start() if n else None
    try:
        await asyncio.gather(*(one(i) for i in range(n)))
    finally:
        await _Progress.stop(ticker)
    return RefineRun(stage, partition, [o for o in outcomes if o is not None])
