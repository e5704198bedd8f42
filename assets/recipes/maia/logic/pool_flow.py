"""One question's pool as a unit (§3, App. A.3–A.6): the flow of its 8 answers, then of its 8
true statements, each on its own thread so a pool never waits for another pool's slow call.

Answers: ``pool_size`` independent requests, one per annotator (persona i, seed i; no request
sees another answer) → consistency judge per answer (Fig. 9A; score 0 → regenerated with
feedback, ``regenerate_rounds``) → contradiction test inside the pool (Fig. 9B; the answers it
names are regenerated with feedback, never shown the others) → equal strings / lexical overlap
rephrased (Fig. 10, ``assets.recipes.maia.logic.pools``). Statements: one per answer (Fig. 12A), a
declarative-form check with regeneration, the same rephrasing (App. A.6).

The paper kept all 2,400 pools: what its checks flagged was fixed by hand (App. A.4). Here a
member that still fails after its feedback rounds is drawn again from scratch (same annotator
persona, a new seed, ``reseed_attempts`` times; each discarded draw is a reject row with its
reason), and one that fails every draw is kept *flagged for review* (``review``: the reason and
its detail) with its last text. A pool is never dropped for one failing member; it is rejected
only when no member produced any text at all.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import pandas as pd

from forge.checks.language import WRONG_LANGUAGE, language_first
from forge.llm.refine import ATTEMPT_COLUMNS, RefineRun, Verdict, refine, revise_with_feedback
from forge.llm.stub import advisory
from forge.llm.types import LLMRequest, LLMResult

from .pools import Pool, RephraseTask, pending, postprocess_pools

# threads per partition stage: each pool blocks on its own calls; the engine's concurrency
# budget, not this number, bounds what is in flight
POOL_THREADS = 32


@dataclass
class PoolPrompts:
    generate: Any
    rephrase_equal: Any
    rephrase_overlap: Any
    consistency: Any = None
    contradiction: Any = None
    lang: str = "en"  # tokenisation, function words and first-person forms of the checks


@dataclass
class PoolOutcome:
    """What one question's pool became: kept (members failing every draw flagged ``review``) or
    rejected whole (no member has any text)."""

    key: str
    pool: Pool
    status: str = "kept"  # kept | rejected
    reason: str | None = None
    detail: str | None = None
    member_rejects: list[tuple[str, str, str]] = field(
        default_factory=list
    )  # discarded draws: (member, reason, detail)
    review: dict[int, str] = field(default_factory=dict)  # member → "reason: detail" (kept, flagged for review)
    pool_review: list[str] = field(default_factory=list)  # pool-level flags (a check that did not run)
    results: dict[int, LLMResult | None] = field(default_factory=dict)  # member → accepted generation
    made_by: dict[int, dict[str, Any]] = field(default_factory=dict)  # flagged member → its last draw's model
    scores: dict[int, int | None] = field(default_factory=dict)  # member → last consistency score
    regenerated: dict[int, int] = field(default_factory=dict)  # member → regenerations (feedback or new seed)
    reseeded: dict[int, int] = field(default_factory=dict)  # member → fresh draws with a new seed
    n_inconsistent: int = 0  # consistency verdicts 0 seen (before regeneration)
    n_partially_consistent: int = 0
    contradiction: bool | None = None
    contradiction_before_fix: bool | None = None  # the first test, before any regeneration (App. A.3's 9.75 %)
    attempts: list[pd.DataFrame] = field(default_factory=list)
    next_round: int = 0  # attempt rows of each refine pass continue the member's round numbers

    def reject_pool(self, reason: str, detail: str) -> PoolOutcome:
        self.status, self.reason, self.detail = "rejected", reason, detail
        return self

    def member_reject(self, member_id: str, reason: str, detail: str) -> None:
        self.member_rejects.append((member_id, reason, detail))

    def flag(self, i: int, reason: str, detail: str = "") -> None:
        self.review[i] = f"{reason}: {detail}".strip(": ")[:500]

    def review_reasons(self) -> list[str]:
        return [*self.pool_review, *(r.split(":", 1)[0] for r in self.review.values())]

    def member_review(self, i: int) -> str | None:
        """What a reviewer should look at for member ``i`` (the pool's own flags first), or None."""
        notes = [*self.pool_review, *([self.review[i]] if i in self.review else [])]
        return "; ".join(notes) or None

    def provenance(self, i: int) -> dict[str, Any]:
        """prompt hash / model / backend of member ``i``'s kept text (accepted or flagged draw)."""
        r = self.results.get(i)
        if r is not None:
            return {"prompt_hash": r.prompt_hash, "model": r.model, "backend": r.backend}
        return self.made_by.get(i) or {"prompt_hash": None, "model": "human", "backend": "human"}


def each_pool(engine: Any, keys: list[str], body: Callable[[str], Any]) -> list[Any]:
    """``body(key)`` for every pool of a partition at once (threads), results in key order."""
    return engine.map_partitions(keys, body, parallel=min(len(keys), POOL_THREADS)) if keys else []


# -- answers -------------------------------------------------------------------------------------
def personas_for(personas: list[str] | dict[str, list[str]], lang: str) -> list[str]:
    """The annotator personas in the prompt's language (a plain list serves every language)."""
    if isinstance(personas, dict):
        if lang not in personas:
            raise ValueError(f"answers.personas has no list for language {lang!r} (has {sorted(personas)})")
        return list(personas[lang])
    return list(personas)


def annotator_requests(
    q: dict[str, Any], prompt: Any, images: list[Any], variables: dict[str, Any], personas: list[str], size: int
) -> list[LLMRequest]:
    """``size`` independent requests: annotator i has persona i and seed i, and sees only the question."""
    if len(personas) < size:
        raise ValueError(f"answers.personas lists {len(personas)} annotators; pool_size needs {size}")
    return [
        LLMRequest(
            item_id=f"{q['question_id']}_a{i}",
            prompt=prompt,
            images=images,
            variables={**variables, "question": q["question"], "persona": personas[i]},
            params={"seed": i},
        )
        for i in range(size)
    ]


def consistency_request(prompt: Any, question: str, item_id: str, answer: str) -> LLMRequest:
    return LLMRequest(item_id=item_id, prompt=prompt, variables={"question": question, "answer": answer})


def consistency_verdict(data: dict[str, Any]) -> Verdict:
    """Fig. 9A: 0 = not consistent → regenerate; 1 consistent and 2 partially consistent pass."""
    if int(data["score"]) == 0:
        return Verdict("major", "The answer does not answer the question: answer exactly what is asked.")
    return Verdict("pass", "")


CONTRADICTS = (
    "Your answer contradicts what other people who watched the same video answered. Watch the frames again "
    "and answer only with what the video shows."
)


def _judge_scores(run: RefineRun) -> dict[str, list[int]]:
    """item id → consistency scores of its judge calls, in order."""
    out: dict[str, list[int]] = {}
    for o in run.outcomes:
        for a in o.attempts:
            if a["step"] == "judge" and a["ok"] and a["output"]:
                out.setdefault(o.item_id, []).append(int(json.loads(a["output"])["score"]))
    return out


def _shift_rounds(df: pd.DataFrame, by: int) -> pd.DataFrame:
    """Attempt rows of a later refine pass continue the member's round numbers (no key collision)."""
    if by and len(df):
        df = df.copy()
        df["round"] = df["round"] + by
    return df


def provenance_of(r: LLMResult | None) -> dict[str, Any]:
    return {"prompt_hash": r.prompt_hash, "model": r.model, "backend": r.backend} if r else {}


def reseed(req: LLMRequest, draw: int, size: int) -> LLMRequest:
    """The same annotator (persona, prompt, frames) drawn afresh: a new seed, no feedback turns."""
    seed = int((req.params or {}).get("seed", 0)) + size * draw
    return replace(req, params={**(req.params or {}), "seed": seed}, extra_messages=[])


def last_output(o: Any, key: str) -> tuple[str, dict[str, Any]] | None:
    """The last generated ``key`` of a rejected refine outcome (what a reviewer would fix) and the
    model that wrote it, if any."""
    for a in reversed(o.attempts):
        if a["step"] == "generate" and a["ok"] and a["output"]:
            text = str(json.loads(a["output"]).get(key) or "").strip()
            if text:
                return text, {"prompt_hash": a["prompt_hash"], "model": a["model"], "backend": a["backend"]}
    return None


def member_reason(o: Any, kind: str) -> str:
    """Reject code of a member's failed refine outcome (``kind``: ``answer`` or ``statement``)."""
    if o.verdict is not None and o.verdict.source == WRONG_LANGUAGE:
        return "wrong_language"
    if o.reason in ("max_rounds", "verdict_reject"):
        return "inconsistent_answer" if kind == "answer" else "statement_invalid"
    if o.reason == "judge_failed":
        return "consistency_check_failed"
    return "llm_failed"


def draw_members(
    out: PoolOutcome,
    reqs: dict[int, LLMRequest],
    run_refine: Callable[[list[LLMRequest]], Any],
    accept: Callable[[int, Any], None],
    key: str,
    reseeds: int,
    size: int,
) -> dict[int, str | None]:
    """Refine ``reqs`` (member index → request); a member that fails is drawn again with a new seed
    up to ``reseeds`` times, each discarded draw a reject row. Returns the members that failed
    every draw → their last text (None when no draw gave any), for the caller to flag."""
    left, draw = dict(reqs), 0
    last: dict[int, str | None] = {}
    flagged: set[int] = set()
    while left:
        run = run_refine(list(left.values()))
        out.attempts.append(_shift_rounds(run.attempts_frame(), out.next_round))
        out.next_round += max((o.rounds for o in run.outcomes), default=0) + 1
        ids = {r.item_id: i for i, r in left.items()}
        failed: dict[int, LLMRequest] = {}
        for o in run.outcomes:
            i = ids[o.item_id]
            out.regenerated[i] = out.regenerated.get(i, 0) + o.rounds + (1 if draw else 0)
            if o.accepted:
                accept(i, o)
                continue
            reason, found = member_reason(o, key), last_output(o, key)
            if found is not None:
                last[i], out.made_by[i] = found
            if draw < reseeds:
                out.member_reject(o.item_id, reason, f"draw {draw + 1} discarded, drawn again: {o.detail or ''}")
                failed[i] = reseed(reqs[i], draw + 1, size)
                out.reseeded[i] = out.reseeded.get(i, 0) + 1
            else:
                out.flag(i, reason, f"after {draw + 1} draws: {o.detail or ''}")
                flagged.add(i)
        left, draw = failed, draw + 1
    return {i: last.get(i) for i in sorted(flagged)}


def build_answer_pool(
    engine: Any,
    stage: str,
    batch: str,
    q: dict[str, Any],
    prompts: PoolPrompts,
    cfg: dict[str, Any],
    pcfg: dict[str, Any],
    *,
    requests: list[LLMRequest] | None = None,
    imported: list[str] | None = None,
) -> PoolOutcome:
    """The answer pool of question ``q``: generated from ``requests``, or the ``imported`` answers,
    or both (``answers.source: mixed``): the imported answers take the first slots and the requests
    of the remaining slots fill the gaps. Imported answers are people's: checked, never regenerated."""
    qid, size, rounds = q["question_id"], int(cfg["pool_size"]), int(cfg.get("regenerate_rounds", 2))
    reseeds = int(cfg.get("reseed_attempts", 2))
    ids = [f"{qid}_a{i}" for i in range(size)]
    texts: list[str | None] = [None] * size
    out = PoolOutcome(qid, Pool(key=qid, member_ids=ids, texts=[""] * size))
    checks = language_first(prompts.lang, ["answer"], [])

    def judge(req: LLMRequest, data: dict[str, Any]) -> LLMRequest:
        return consistency_request(prompts.consistency, q["question"], req.item_id, str(data.get("answer", "")))

    def run_refine(reqs: list[LLMRequest]) -> Any:
        run = refine(
            engine, stage, batch, reqs, checks=checks, judge=judge, parse_verdict=consistency_verdict, max_rounds=rounds
        )
        for item, seen in _judge_scores(run).items():
            out.n_inconsistent += sum(1 for s in seen if s == 0)
            out.scores[ids.index(item)] = seen[-1] if seen else None
        return run

    def accept(i: int, o: Any) -> None:
        texts[i], out.results[i] = str(o.data["answer"]).strip(), o.result
        out.review.pop(i, None)

    def generate(reqs: dict[int, LLMRequest]) -> None:
        flagged = draw_members(out, reqs, run_refine, accept, "answer", reseeds, size)
        for i, text in flagged.items():
            if text is not None:  # a member with no text at all stays a gap in the pool
                texts[i] = text

    given = [str(a).strip() for a in imported or []][:size]
    if imported is not None:
        _imported_answers(engine, stage, batch, q, prompts, ids, given, out, texts)
    base = {i: r for i, r in enumerate(requests or []) if i >= len(given)}  # the slots no person filled
    if base:
        generate(dict(base))
    out.n_partially_consistent = sum(1 for s in out.scores.values() if s == 2)
    if not any(texts):
        out.pool.texts = [""] * size
        return out.reject_pool("pool_too_small", _short(out, _missing(texts), "answers"))

    # contradiction inside the pool (Fig. 9B): the first test's result is kept (comparable with the
    # paper's 9.75 %, measured before any fix). answers.contradicting_answers: adjudicate (the
    # paper's step, §3 fn. 7) flags the named answers `pool_contradiction` at once, and the review
    # sends the pool to another annotator (forge/review/units.py); regenerate (not the paper: it
    # pushes the pool towards consensus) asks the named answers again with feedback, then draws them
    # afresh; still contradicting after the redraws → flagged, never dropped
    current = dict(base)
    for rnd in range(rounds + reseeds + 1):
        listing = "\n".join(f"A{i + 1}: {t}" for i, t in enumerate(texts) if t is not None)
        cr = engine.run(
            stage,
            batch,
            [
                LLMRequest(
                    item_id=qid, prompt=prompts.contradiction, variables={"question": q["question"], "answers": listing}
                )
            ],
        )[0]
        if not cr.ok:  # fail closed: the pool is kept but says its contradiction test did not run
            out.pool_review.append(f"contradiction_check_failed: {cr.error_class or ''} {cr.error or ''}".strip())
            break
        out.contradiction = bool(cr.data["contradiction"])
        if out.contradiction_before_fix is None:
            out.contradiction_before_fix = out.contradiction
        if not out.contradiction or advisory(cr):
            break
        named = sorted({int(k) - 1 for k in cr.data.get("conflicting") or [] if 1 <= int(k) <= size})
        regenerate = contradicting_answers(cfg) == "regenerate"
        # a person's answer (answers.source people/mixed) is flagged, never asked again
        redraw = [i for i in named if i in base] if regenerate and rnd < rounds + reseeds else []
        stay = [i for i in named if i not in redraw] if redraw else named or list(range(size))
        for i in stay:
            if texts[i] is not None:
                out.flag(i, "pool_contradiction", f"answers {[k + 1 for k in named]} contradict the others")
        if not redraw:
            break
        named = redraw
        if rnd < rounds:
            fix = {
                i: revise_with_feedback(
                    current[i], {"answer": texts[i]}, Verdict("major", CONTRADICTS, "contradiction")
                )
                for i in named
            }
        else:
            fix = {i: reseed(base[i], reseeds + rnd - rounds + 1, size) for i in named}  # past the others' draws
            for i in named:
                out.member_reject(ids[i], "pool_contradiction", f"contradicts the pool: drawn again ({texts[i]})")
        current.update(fix)
        generate(fix)

    out.pool = Pool(key=qid, member_ids=ids, texts=[t or "" for t in texts], context={"question": q["question"]})
    _mark_gaps(out.pool, texts)
    return _rephrase_and_close(engine, stage, batch, out, prompts, pcfg, size, "answers")


CONTRADICTING = ("adjudicate", "regenerate")


def contradicting_answers(cfg: dict[str, Any]) -> str:
    """``answers.contradicting_answers``: what a contradicting pool's named answers get (adjudicate:
    flagged for another annotator; regenerate: asked again with feedback). The old key
    ``regenerate_contradicting_answers`` is refused by name, never read as something else."""
    if "regenerate_contradicting_answers" in cfg:
        raise ValueError(
            "answers.regenerate_contradicting_answers is gone: use answers.contradicting_answers: adjudicate "
            "(the paper: another annotator resolves the pool in review) or regenerate"
        )
    v = str(cfg.get("contradicting_answers", "adjudicate"))
    if v not in CONTRADICTING:
        raise ValueError(f"answers.contradicting_answers: {v!r} is not one of {', '.join(CONTRADICTING)}")
    return v


def _imported_answers(
    engine: Any,
    stage: str,
    batch: str,
    q: dict[str, Any],
    prompts: PoolPrompts,
    ids: list[str],
    given: list[str],
    out: PoolOutcome,
    texts: list[str | None],
) -> None:
    """Human answers are checked, never regenerated: a failing one is kept, flagged for review."""
    for i, a in enumerate(given):
        texts[i] = a
    check_people(engine, stage, batch, q, prompts, ids, dict(enumerate(given)), out)


def check_people(
    engine: Any,
    stage: str,
    batch: str,
    q: dict[str, Any],
    prompts: PoolPrompts,
    ids: list[str],
    given: dict[int, str],
    out: PoolOutcome,
) -> None:
    """The consistency check (Fig. 9A) of people's answers (member -> text), imported or a reviewer's
    correction: checked, never regenerated; a failing or unchecked one is flagged for review."""
    res = engine.run(
        stage,
        batch,
        [consistency_request(prompts.consistency, q["question"], ids[i], a) for i, a in given.items()],
    )
    for (i, a), r in zip(given.items(), res, strict=True):
        out.results[i] = None
        if not r.ok:  # fail closed: an answer whose check did not run is never passed silently
            out.flag(i, "consistency_check_failed", f"{r.error_class or ''}: {r.error or ''}")
            continue
        out.scores[i] = int(r.data["score"])
        if out.scores[i] == 0 and not advisory(r):
            out.n_inconsistent += 1
            out.flag(i, "inconsistent_answer", a)


# -- statements ----------------------------------------------------------------------------------
_FIRST_PERSON = {
    "en": re.compile(r"\bI\b|\b[Mm]y\b|\bme\b|\bmyself\b"),
    # subject/object pronouns and possessives; first-person verb endings are left to the judge
    "it": re.compile(r"\b(?:[Ii]o|[Mm]io|[Mm]ia|[Mm]iei|[Mm]ie|me|mi)\b"),
}
_FEEDBACK = {
    "en": (
        "The statement is empty.",
        "S is a question: write a declarative sentence.",
        "S speaks in the first person: make it impersonal.",
    ),
    "it": (
        "L'affermazione è vuota.",
        "S è una domanda: scrivi una frase dichiarativa.",
        "S è in prima persona: rendila impersonale.",
    ),
}


def declarative_statement(req: LLMRequest, data: dict[str, Any], lang: str = "en") -> Verdict | None:
    """Fig. 12A: S is a concise declarative, impersonal sentence (feedback in the recipe's language)."""
    empty, question, personal = _FEEDBACK.get(lang, _FEEDBACK["en"])
    s = str(data.get("statement", "")).strip()
    if not s:
        return Verdict("major", empty)
    if s.endswith("?"):
        return Verdict("major", question)
    if _FIRST_PERSON.get(lang, _FIRST_PERSON["en"]).search(s):
        return Verdict("major", personal)
    return None


def build_statement_pool(
    engine: Any,
    stage: str,
    batch: str,
    q: dict[str, Any],
    answers: list[dict[str, Any]],
    prompts: PoolPrompts,
    cfg: dict[str, Any],
    pcfg: dict[str, Any],
    size: int,
    adjust: Callable[[list[LLMRequest]], list[LLMRequest]] | None = None,
) -> PoolOutcome:
    """The true-statement pool of question ``q`` from its kept answers (sorted by ``idx``); ``adjust``
    rewrites the requests first (a rejected statement's seed moved: "regenerate rejected")."""
    qid = q["question_id"]
    ids = [f"{qid}_s{int(a['idx'])}" for a in answers]
    out = PoolOutcome(qid, Pool(key=qid, member_ids=ids, texts=[""] * len(ids)))
    reqs = {
        k: LLMRequest(
            item_id=ids[k],
            prompt=prompts.generate,
            variables={"question": q["question"], "answer": a["answer"]},
        )
        for k, a in enumerate(answers)
    }
    if adjust is not None:
        reqs = dict(zip(reqs, adjust(list(reqs.values())), strict=True))
    checks = language_first(
        prompts.lang, ["statement"], [lambda req, data: declarative_statement(req, data, prompts.lang)]
    )
    texts: list[str | None] = [None] * len(ids)

    def run_refine(batch_reqs: list[LLMRequest]) -> Any:
        return refine(engine, stage, batch, batch_reqs, checks=checks, max_rounds=int(cfg.get("regenerate_rounds", 2)))

    def accept(k: int, o: Any) -> None:
        texts[k], out.results[k] = str(o.data["statement"]).strip(), o.result
        out.review.pop(k, None)

    reseeds = int(cfg.get("reseed_attempts", 2))
    flagged = draw_members(out, reqs, run_refine, accept, "statement", reseeds, size)
    for k, text in flagged.items():
        texts[k] = text
    if not any(texts):
        return out.reject_pool(
            "pool_too_small", _short(out, _missing(texts), "statements", have=len(answers), size=size)
        )
    out.pool = Pool(key=qid, member_ids=ids, texts=[t or "" for t in texts], context={"question": q["question"]})
    _mark_gaps(out.pool, texts)
    return _rephrase_and_close(engine, stage, batch, out, prompts, pcfg, size, "statements")


# -- shared ----------------------------------------------------------------------------------------
def _missing(texts: list[str | None]) -> list[int]:
    return [i for i, t in enumerate(texts) if t is None]


def _mark_gaps(pool: Pool, texts: list[str | None]) -> None:
    """Members no draw gave any text for: out of the pool (a gap its items report), not rejected."""
    for i in _missing(texts):
        pool.dropped[i] = "no_text"


def _short(out: PoolOutcome, missing: list[int], what: str, have: int | None = None, size: int | None = None) -> str:
    n = (have if have is not None else len(out.pool.texts)) - len(missing)
    size = size or len(out.pool.texts)
    why = "; ".join(f"{mid}: {reason}" for mid, reason, _ in out.member_rejects)
    return f"{n}/{size} valid {what}" + (f" ({why})" if why else "")


def _rephrase_and_close(
    engine: Any,
    stage: str,
    batch: str,
    out: PoolOutcome,
    prompts: PoolPrompts,
    pcfg: dict[str, Any],
    size: int,
    what: str,
) -> PoolOutcome:
    """Equal strings / overlap rephrasing (bounded rounds); what is still equal or overlapping after
    the last round is kept, flagged for review (the paper edited those by hand, App. A.4)."""
    attempts: list[dict[str, Any]] = []
    rephrase, on_result = rephraser(engine, stage, batch, attempts, prompts)
    method, threshold = pcfg.get("overlap_method", "jaccard"), float(pcfg["overlap_threshold"])
    postprocess_pools(
        [out.pool],
        rephrase,
        threshold=threshold,
        max_rounds=int(pcfg["max_rephrase_rounds"]),
        method=method,
        on_result=on_result,
        drop_unresolved=False,
        lang=prompts.lang,
    )
    out.attempts.append(finalise_attempts(attempts, [out.pool]))
    if not advisory(engine):  # placeholder text cannot be diversified: nothing to review
        for i, kind in pending(out.pool, threshold, method, prompts.lang):
            why = "equal_unresolved" if kind == "equal" else "overlap_unresolved"
            out.flag(i, why, out.pool.texts[i])
    kept = len(out.pool.alive())
    if kept < size:
        out.pool_review.append(f"pool_short: {kept}/{size} {what}")
    return out


def rephraser(engine: Any, stage: str, batch: str, attempts: list[dict[str, Any]], prompts: PoolPrompts):
    """The rephrase callback of ``postprocess_pools`` (Fig. 10A/B) and its attempt-row recorder."""
    results: dict[int, Any] = {}

    def rephrase(tasks: list[RephraseTask]) -> list[str | None]:
        reqs = []
        for t in tasks:
            if t.kind == "equal":
                reqs.append(
                    LLMRequest(
                        item_id=t.member_id,
                        prompt=prompts.rephrase_equal,
                        variables={"question": t.context["question"], "text": t.text},
                    )
                )
            else:
                others = "\n".join(f"A{k + 1}: {o}" for k, o in enumerate(t.others))
                reqs.append(
                    LLMRequest(
                        item_id=t.member_id,
                        prompt=prompts.rephrase_overlap,
                        params={"seed": t.round},
                        variables={
                            "question": t.context["question"],
                            "others": others,
                            "text": t.text,
                            "n_last": len(t.others) + 1,
                        },
                    )
                )
        res = engine.run(stage, batch, reqs)
        for t, r in zip(tasks, res):
            results[id(t)] = r
        return [str(r.data["text"]) if r.ok else None for r in res]

    def on_result(task: RephraseTask, new: str | None, accepted: bool) -> None:
        r = results.get(id(task))
        attempts.append(
            {
                "stage": stage,
                "partition": batch,
                "item_id": task.member_id,
                "round": task.round,
                "step": f"rephrase:{task.kind}",
                "prompt_name": r.prompt_name if r else "",
                "prompt_hash": r.prompt_hash if r else "",
                "model": r.model if r else "",
                "backend": r.backend if r else engine.backend_name,
                "ok": bool(r and r.ok),
                "cached": bool(r and r.cached),
                "verdict": "pass" if accepted else "major",
                "feedback": None if accepted else f"still equal or > threshold overlap: {task.kind}",
                "output": json.dumps({"text": new}) if new is not None else None,
                "error": r.error if r and not r.ok else None,
                "advisory": advisory(engine),
                "final_status": "accepted",
            }
        )

    return rephrase, on_result


def finalise_attempts(attempts: list[dict[str, Any]], pools: list[Pool]) -> pd.DataFrame:
    """One row per (member, round, step); final_status says whether the member survived."""
    dropped = {p.member_ids[i] for p in pools for i in p.dropped}
    df = pd.DataFrame(attempts, columns=ATTEMPT_COLUMNS)
    if len(df):
        df["final_status"] = df["item_id"].map(lambda m: "rejected" if m in dropped else "accepted")
        df = df.drop_duplicates(subset=["stage", "partition", "item_id", "round", "step"], keep="last")
    return df


def pool_final_status(out: PoolOutcome) -> PoolOutcome:
    """Every attempt row of a rejected pool says ``rejected``: nothing of it reached the tables."""
    if out.status == "rejected":
        out.attempts = [replace_status(df, "rejected") for df in out.attempts]
    return out


def replace_status(df: pd.DataFrame, status: str) -> pd.DataFrame:
    if len(df):
        df = df.copy()
        df["final_status"] = status
    return df


# -- foils ---------------------------------------------------------------------------------------
@dataclass
class Redrawn:
    """Items refined, then drawn afresh (new seed) while they fail, then flagged (foils, App. A.8)."""

    accepted: dict[str, Any] = field(default_factory=dict)  # item id → accepted refine outcome
    flagged: dict[str, tuple[str | None, str, dict[str, Any]]] = field(default_factory=dict)  # → text, why, made by
    discarded: list[tuple[str, str, str]] = field(default_factory=list)  # (item id, reason, detail) per failed draw
    attempts: list[pd.DataFrame] = field(default_factory=list)


def refine_reason(o: Any) -> str:
    """Reject code of a failed refine outcome (``refine_<reason>``; the language check's own)."""
    if o.verdict is not None and o.verdict.source == WRONG_LANGUAGE:
        return "wrong_language"
    if o.reason == "generation_failed":
        return "refine_generation_failed"
    if o.reason == "judge_failed":
        return "refine_judge_failed"
    if o.reason == "verdict_reject":
        return "refine_verdict_reject"
    return "refine_max_rounds"


def redraw(run_refine: Callable[[list[LLMRequest]], Any], reqs: list[LLMRequest], reseeds: int, key: str) -> Redrawn:
    """``run_refine`` over ``reqs``; what fails is drawn again with a new seed up to ``reseeds``
    times, then flagged for review with its last ``key`` text (never dropped silently)."""
    out, left, offset = Redrawn(), {r.item_id: r for r in reqs}, 0
    base = dict(left)
    last: dict[str, tuple[str, dict[str, Any]]] = {}
    for draw in range(reseeds + 1):
        if not left:
            break
        run = run_refine(list(left.values()))
        out.attempts.append(_shift_rounds(run.attempts_frame(), offset))
        offset += max((o.rounds for o in run.outcomes), default=0) + 1
        nxt = {}
        for o in run.outcomes:
            if o.accepted:
                out.accepted[o.item_id] = o
                continue
            if (found := last_output(o, key)) is not None:
                last[o.item_id] = found
            reason = refine_reason(o)
            if draw < reseeds:
                out.discarded.append((o.item_id, reason, f"draw {draw + 1} discarded, drawn again: {o.detail or ''}"))
                nxt[o.item_id] = reseed(base[o.item_id], draw + 1, 1)
            else:
                text, made_by = last.get(o.item_id, (None, {}))
                out.flagged[o.item_id] = (text, f"{reason}: after {draw + 1} draws: {o.detail or ''}"[:500], made_by)
        left = nxt
    return out
