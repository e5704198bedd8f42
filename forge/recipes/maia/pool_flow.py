"""One question's pool as a unit (§3, App. A.3–A.6): the flow of its 8 answers, then of its 8
true statements, each on its own thread so a pool never waits for another pool's slow call.

Answers: ``pool_size`` independent requests, one per annotator (persona i, seed i; no request
sees another answer) → consistency judge per answer (Fig. 9A; score 0 → regenerated with
feedback, ``regenerate_rounds``) → contradiction test inside the pool (Fig. 9B; the answers it
names are regenerated with feedback, never shown the others) → equal strings / lexical overlap
rephrased (Fig. 10, ``forge.recipes.maia.pools``). Statements: one per answer (Fig. 12A), a
declarative-form check with regeneration, the same rephrasing (App. A.6).

A pool that still has fewer than ``pool_size`` valid members is rejected whole: the outcome
says ``rejected`` with the reason and every failing member's own reason; no partial pool is
ever written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from forge.llm.refine import ATTEMPT_COLUMNS, RefineRun, Verdict, refine, revise_with_feedback
from forge.llm.stub import advisory
from forge.llm.types import LLMRequest, LLMResult
from forge.recipes.maia.pools import Pool, RephraseTask, postprocess_pools

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
    """What one question's pool became: kept (exactly ``pool_size`` members) or rejected whole."""

    key: str
    pool: Pool
    status: str = "kept"  # kept | rejected
    reason: str | None = None
    detail: str | None = None
    member_rejects: list[tuple[str, str, str]] = field(default_factory=list)  # (member id, reason, detail)
    results: dict[int, LLMResult | None] = field(default_factory=dict)  # member → accepted generation
    scores: dict[int, int | None] = field(default_factory=dict)  # member → last consistency score
    regenerated: dict[int, int] = field(default_factory=dict)  # member → regenerations after feedback
    n_inconsistent: int = 0  # consistency verdicts 0 seen (before regeneration)
    n_partially_consistent: int = 0
    contradiction: bool | None = None
    attempts: list[pd.DataFrame] = field(default_factory=list)

    def reject_pool(self, reason: str, detail: str) -> PoolOutcome:
        self.status, self.reason, self.detail = "rejected", reason, detail
        return self

    def member_reject(self, member_id: str, reason: str, detail: str) -> None:
        self.member_rejects.append((member_id, reason, detail))


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
    """The answer pool of question ``q`` (generated from ``requests`` or the ``imported`` answers)."""
    qid, size, rounds = q["question_id"], int(cfg["pool_size"]), int(cfg.get("regenerate_rounds", 2))
    ids = [f"{qid}_a{i}" for i in range(size)]
    texts: list[str | None] = [None] * size
    out = PoolOutcome(qid, Pool(key=qid, member_ids=ids, texts=[""] * size))

    def judge(req: LLMRequest, data: dict[str, Any]) -> LLMRequest:
        return consistency_request(prompts.consistency, q["question"], req.item_id, str(data.get("answer", "")))

    def generate(reqs: list[LLMRequest], offset: int) -> None:
        run = refine(
            engine,
            stage,
            batch,
            reqs,
            judge=judge,
            parse_verdict=consistency_verdict,
            max_rounds=rounds,
        )
        out.attempts.append(_shift_rounds(run.attempts_frame(), offset))
        scores = _judge_scores(run)
        for o in run.outcomes:
            i = ids.index(o.item_id)
            seen = scores.get(o.item_id, [])
            out.n_inconsistent += sum(1 for s in seen if s == 0)
            out.regenerated[i] = out.regenerated.get(i, 0) + o.rounds + (1 if offset else 0)
            if o.accepted:
                texts[i], out.results[i] = str(o.data["answer"]).strip(), o.result
                out.scores[i] = seen[-1] if seen else None
            else:
                texts[i] = None
                reason = (
                    "inconsistent_answer"
                    if o.reason == "max_rounds"
                    else "consistency_check_failed"
                    if o.reason == "judge_failed"
                    else "llm_failed"
                )
                out.member_reject(o.item_id, reason, o.detail or "")

    if imported is not None:
        given = [str(a).strip() for a in imported][:size]
        res = engine.run(
            stage,
            batch,
            [consistency_request(prompts.consistency, q["question"], ids[i], a) for i, a in enumerate(given)],
        )
        for i, (a, r) in enumerate(zip(given, res)):
            if not r.ok:  # fail closed: an answer whose check did not run is never kept as passed
                out.member_reject(ids[i], "consistency_check_failed", f"{r.error_class or ''}: {r.error or ''}")
                continue
            out.scores[i] = int(r.data["score"])
            if out.scores[i] == 0 and not advisory(r):  # a human answer cannot be regenerated
                out.n_inconsistent += 1
                out.member_reject(ids[i], "inconsistent_answer", a)
                continue
            texts[i], out.results[i] = a, None
    else:
        generate(list(requests or []), 0)
    out.n_partially_consistent = sum(1 for s in out.scores.values() if s == 2)
    out.pool.texts = [t or "" for t in texts]
    if missing := _missing(texts):
        return out.reject_pool("pool_too_small", _short(out, missing, "answers"))

    # contradiction inside the pool (Fig. 9B): the named answers are regenerated with feedback
    current = {i: r for i, r in enumerate(requests or [])}
    for rnd in range(rounds + 1):
        listing = "\n".join(f"A{i + 1}: {t}" for i, t in enumerate(texts))
        cr = engine.run(
            stage,
            batch,
            [
                LLMRequest(
                    item_id=qid, prompt=prompts.contradiction, variables={"question": q["question"], "answers": listing}
                )
            ],
        )[0]
        if not cr.ok:
            return out.reject_pool(
                "contradiction_check_failed", f"{cr.error_class or ''}: {cr.error or ''}".strip(": ")
            )
        out.contradiction = bool(cr.data["contradiction"])
        if not out.contradiction or advisory(cr) or not bool(cfg.get("drop_contradicting_pools", True)):
            break
        named = sorted({int(k) - 1 for k in cr.data.get("conflicting") or [] if 1 <= int(k) <= size})
        if imported is not None or not named or rnd == rounds:
            return out.reject_pool("pool_contradiction", f"answers {[k + 1 for k in named]} contradict the others")
        reqs = [
            revise_with_feedback(current[i], {"answer": texts[i]}, Verdict("major", CONTRADICTS, "contradiction"))
            for i in named
        ]
        for i, r in zip(named, reqs):
            current[i] = r
        generate(reqs, offset=(rnd + 1) * (rounds + 1))
        out.pool.texts = [t or "" for t in texts]
        if missing := _missing(texts):
            return out.reject_pool("pool_too_small", _short(out, missing, "answers"))

    out.pool = Pool(key=qid, member_ids=ids, texts=[str(t) for t in texts], context={"question": q["question"]})
    return _rephrase_and_close(engine, stage, batch, out, prompts, pcfg, size, "answers")


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
) -> PoolOutcome:
    """The true-statement pool of question ``q`` from its kept answers (sorted by ``idx``)."""
    qid = q["question_id"]
    ids = [f"{qid}_s{int(a['idx'])}" for a in answers]
    out = PoolOutcome(qid, Pool(key=qid, member_ids=ids, texts=[""] * len(ids)))
    reqs = [
        LLMRequest(
            item_id=ids[k], prompt=prompts.generate, variables={"question": q["question"], "answer": a["answer"]}
        )
        for k, a in enumerate(answers)
    ]
    run = refine(
        engine,
        stage,
        batch,
        reqs,
        checks=[lambda req, data: declarative_statement(req, data, prompts.lang)],
        max_rounds=int(cfg.get("regenerate_rounds", 2)),
    )
    out.attempts.append(run.attempts_frame())
    texts: list[str | None] = [None] * len(ids)
    for k, o in enumerate(run.outcomes):
        out.regenerated[k] = o.rounds
        if o.accepted:
            texts[k], out.results[k] = str(o.data["statement"]).strip(), o.result
        else:
            reason = "llm_failed" if o.reason == "generation_failed" else "statement_invalid"
            out.member_reject(o.item_id, reason, o.detail or "")
    out.pool.texts = [t or "" for t in texts]
    if len(answers) < size or _missing(texts):
        return out.reject_pool(
            "pool_too_small", _short(out, _missing(texts), "statements", have=len(answers), size=size)
        )
    out.pool = Pool(key=qid, member_ids=ids, texts=[str(t) for t in texts], context={"question": q["question"]})
    return _rephrase_and_close(engine, stage, batch, out, prompts, pcfg, size, "statements")


# -- shared ----------------------------------------------------------------------------------------
def _missing(texts: list[str | None]) -> list[int]:
    return [i for i, t in enumerate(texts) if t is None]


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
    """Equal strings / overlap rephrasing (bounded rounds); the pool is kept only with ``size`` members."""
    attempts: list[dict[str, Any]] = []
    rephrase, on_result = rephraser(engine, stage, batch, attempts, prompts)
    postprocess_pools(
        [out.pool],
        rephrase,
        threshold=float(pcfg["overlap_threshold"]),
        max_rounds=int(pcfg["max_rephrase_rounds"]),
        method=pcfg.get("overlap_method", "jaccard"),
        on_result=on_result,
        drop_unresolved=not advisory(engine),
        lang=prompts.lang,
    )
    out.attempts.append(finalise_attempts(attempts, [out.pool]))
    for i, why in sorted(out.pool.dropped.items()):
        out.member_reject(out.pool.member_ids[i], why, out.pool.texts[i])
    if len(out.pool.alive()) < size:
        out.reject_pool("pool_too_small", _short(out, sorted(out.pool.dropped), what))
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
def short_pools(statements: list[dict[str, Any]], accepted: set[str], size: int) -> dict[str, str]:
    """question id → why its pool is rejected whole: fewer than ``size`` statements with a valid foil.

    ``statements`` are the rows of ``maia_statements`` (``statement_id``, ``question_id``);
    ``accepted`` the statement ids whose foil passed every check."""
    by_q: dict[str, list[str]] = {}
    for r in statements:
        by_q.setdefault(str(r["question_id"]), []).append(str(r["statement_id"]))
    out = {}
    for qid, ids in by_q.items():
        failed = [i for i in ids if i not in accepted]
        if len(ids) - len(failed) < size:
            out[qid] = f"{len(ids) - len(failed)}/{size} valid foils" + (
                f" (no valid foil for {', '.join(sorted(failed))})" if failed else ""
            )
    return out
