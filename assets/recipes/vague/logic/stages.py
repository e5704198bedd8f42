"""VAGUE's recipe stages as plain functions (Nam et al., §4.2-§4.3): the direct expression and its
rating (§4.2.1), the indirect expression, its ambiguity check and selection (§4.2.2), the
counterfactual options (§4.2.3) and the items (§3.1). Each takes its inputs as frames, the LLM
engine (and embedder) and a reject log, and returns rows; the Dagster assets (``assets.py``) read
the batch's tables, call these and publish. Dagster-free.

Stub output (``forge.llm.stub.advisory``): judge ratings, the ambiguity check, the NE check and
duplicate options on placeholder text are recorded (the row's ``advisory`` column, the items'
``extra.advisory``, ``llm_attempts``) but never reject, so the demo yields items.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from pathlib import Path
from typing import Any

import pandas as pd

from forge.checks import mcq
from forge.items.cells import as_list
from forge.llm.prompts import load_prompt
from forge.llm.refine import Verdict, refine
from forge.llm.stub import advisory
from forge.llm.types import ImageInput, LLMRequest, LLMResult
from forge.review import regenerate
from forge.storage import RejectLog, TableStore

from . import logic

PROMPTS_DIR = Path(__file__).resolve().parents[1] / "prompts"
PROMPT_FILES = {
    "direct": PROMPTS_DIR / "direct.yaml",
    "rate_direct": PROMPTS_DIR / "rate_direct.yaml",
    "indirect": PROMPTS_DIR / "indirect.yaml",
    "select_indirect": PROMPTS_DIR / "select_indirect.yaml",
    "fake_scene": PROMPTS_DIR / "fake_scene.yaml",
    "nonexistent": PROMPTS_DIR / "nonexistent.yaml",
}


def _image(store: TableStore, rel: str) -> list[ImageInput]:
    return [ImageInput(path=store.data_dir / rel)]


def _advisory_col(notes: list[str]) -> str | None:
    """What the verdicts/checks would have rejected, for rows kept because their output is stub."""
    return json.dumps(notes) if notes else None


def _gen_cols(res: LLMResult, base_hash: str) -> dict[str, Any]:
    return {"prompt_name": res.prompt_name, "prompt_hash": base_hash, "model": res.model, "backend": res.backend}


# -- direct (§4.2.1)


def run_direct(
    engine,
    store: TableStore,
    part: str,
    cands: pd.DataFrame,
    cfg: dict[str, Any],
    log: RejectLog,
    tries: dict[str, int] | None = None,
) -> pd.DataFrame:
    """``tries``: frame → regeneration attempt of its intention ("regenerate rejected")."""
    gen_p, rate_p = load_prompt(PROMPT_FILES["direct"]), load_prompt(PROMPT_FILES["rate_direct"])
    cands = cands.reset_index(drop=True)
    reqs = []
    for c in cands.itertuples(index=False):
        labels, objects = as_list(c.person_labels), as_list(c.objects)
        prompt = logic.specialise(gen_p, {"subject": labels or [logic.NO_LABEL_SUBJECT], "object": objects})
        req = LLMRequest(
            c.frame_id,
            prompt,
            {"person_labels": labels or [logic.NO_LABEL_SUBJECT], "objects": objects},
            _image(store, c.image_path),
        )
        reqs.append(regenerate.bump([req], tries or {})[0])

    def checked(c: Any, res: LLMResult) -> tuple[dict | None, list]:
        """(the triple, with its object matched to the frame's tags; None when it fails) and the
        paper's problems with it (diagnosed even in schema-rejected replies)."""
        data = res.data if res.ok else logic.reply_json(res.text)
        problems = logic.triple_problems(data, as_list(c.person_labels), as_list(c.objects)) if data else []
        if problems or not res.ok:
            return None, problems
        return dict(data, object=logic.match_object(data["object"], as_list(c.objects))), []

    def rating(c: Any, d: dict) -> LLMRequest:
        return LLMRequest(
            c.frame_id,
            rate_p,
            {k: d[k] for k in ("direct_expression", "subject", "action", "object")},
            _image(store, c.image_path),
        )

    # (candidate, generation, triple or None, problems, rating or None), in candidate order
    done: list[tuple[Any, LLMResult, dict | None, list, LLMResult | None]] = []
    pairs = list(zip(cands.itertuples(index=False), reqs))
    if engine.uses_batch_api("vague_direct"):  # one Batch API job per step: stage-wide rounds
        gens = engine.run("vague_direct", part, reqs)
        first = [(c, res, *checked(c, res)) for (c, _), res in zip(pairs, gens)]
        rates = iter(engine.run("vague_direct", part, [rating(c, d) for c, _, d, _ in first if d is not None]))
        done = [(c, res, d, probs, next(rates) if d is not None else None) for c, res, d, probs in first]
    else:  # each candidate rated as soon as its own triple is in

        async def chain(pair: tuple[Any, LLMRequest]):
            c, req = pair
            res = await engine.acall("vague_direct", part, req)
            d, probs = checked(c, res)
            jr = await engine.acall("vague_direct", part, rating(c, d)) if d is not None else None
            return c, res, d, probs, jr

        done = engine.flow(f"vague_direct {part}", pairs, chain)
    passed: list[tuple[Any, dict, LLMResult]] = []
    judge: list[LLMResult] = []
    for c, res, d, problems, jr in done:
        if problems:
            log.add(c.frame_id, problems[0][0], "TripleCheck", "; ".join(p[1] for p in problems))
        elif not res.ok:
            log.add(c.frame_id, "direct_generation_failed", res.error_class or "LLMError", res.error or "")
        elif d is not None and jr is not None:
            passed.append((c, d, res))
            judge.append(jr)
    rows = []
    mins = {"relevance": cfg["min_relevance"], "solvability": cfg["min_solvability"]}
    for (c, d, res), jr in zip(passed, judge):
        if not jr.ok:
            log.add(c.frame_id, "direct_judge_failed", jr.error_class or "LLMError", jr.error or "")
            continue
        low = logic.rating_verdict(jr.data, mins)
        notes, judge_keep = [], True
        if low and advisory(jr):
            notes.append(f"low_direct_rating: {', '.join(low)}")
        elif low:  # the judge's drop; the row stays for the raters, whose ratings decide (§4.2.1)
            log.add(
                c.frame_id,
                "low_direct_rating",
                "RatingBelowMinimum",
                f"{', '.join(low)}: {jr.data.get('rationale', '')} (the LLM judge's; people's ratings decide)",
            )
            judge_keep = False
        rows.append(
            {
                "frame_id": c.frame_id,
                "batch": part,
                **{k: d[k] for k in ("direct_expression", "subject", "action", "object", "intention")},
                "relevance": int(jr.data["relevance"]),
                "solvability": int(jr.data["solvability"]),
                "judge_rationale": jr.data.get("rationale"),
                **_gen_cols(res, gen_p.hash),
                "judge_prompt_hash": rate_p.hash,
                "advisory": _advisory_col(notes),
                "judge_keep": judge_keep,
            }
        )
    return pd.DataFrame(rows)


# -- indirect (§4.2.2)


def run_indirect(
    engine,
    embedder,
    store: TableStore,
    part: str,
    direct: pd.DataFrame,
    cands: pd.DataFrame,
    cfg: dict[str, Any],
    log: RejectLog,
    tries: dict[str, int] | None = None,
) -> pd.DataFrame:
    """``tries``: frame → regeneration attempt ("regenerate rejected", ``forge/review/regenerate.py``)."""
    gen_p, sel_p = load_prompt(PROMPT_FILES["indirect"]), load_prompt(PROMPT_FILES["select_indirect"])
    images = dict(zip(cands["frame_id"], cands["image_path"])) if len(cands) else {}
    direct = direct[direct["frame_id"].isin(images)].reset_index(drop=True) if len(direct) else direct

    def generation(d: Any) -> LLMRequest:
        req = LLMRequest(
            d.frame_id,
            gen_p,
            {k: getattr(d, k) for k in ("direct_expression", "subject", "action", "object", "intention")},
            _image(store, images[d.frame_id]),
        )
        return regenerate.bump([req], tries or {})[0]

    def checked(d: Any, res: LLMResult) -> tuple[tuple | None, str]:
        """(the candidates, those that passed the code's ambiguity check, notes), or None and why
        none is ambiguous (None, "" for a failed generation)."""
        if not res.ok:
            return None, ""
        cands_all = []
        for strategy in logic.STRATEGIES:
            c = res.data[strategy]
            rep = logic.ambiguity_check(
                c["expression"],
                d.action,
                d.object,
                d.direct_expression,
                embedder,
                word_threshold=cfg["word_similarity_threshold"],
                sentence_threshold=cfg["sentence_similarity_threshold"],
            )
            cands_all.append({"strategy": strategy, **c, "ambiguity": rep.as_dict()})
        ok = [c for c in cands_all if c["ambiguity"]["ok"]]
        notes: list[str] = []
        if not ok:
            why = "; ".join(f"{c['strategy']}: {','.join(c['ambiguity']['reasons'])}" for c in cands_all)
            if all(c["ambiguity"]["reasons"] == ["wrong_language"] for c in cands_all):
                why = f"wrong_language: {why}"  # no candidate in English: not an ambiguity failure
            if not advisory(res):
                return None, why
            ok, notes = cands_all, [f"indirect_not_ambiguous: {why}"]  # placeholder text: recorded only
        return (cands_all, ok, notes), ""

    def selection(d: Any, ok: list[dict]) -> LLMRequest:
        """Selection + rating (§4.2.2 step 2) among the candidates that passed the code check."""
        listing = [{"id": i, "strategy": c["strategy"], "expression": c["expression"]} for i, c in enumerate(ok)]
        prompt = logic.specialise(sel_p, {"selected": list(range(len(ok)))})
        return LLMRequest(
            d.frame_id,
            prompt,
            {"direct_expression": d.direct_expression, "intention": d.intention, "candidates": listing},
            _image(store, images[d.frame_id]),
        )

    # (direct row, generation, checked candidates or None, why not ambiguous, selection or None)
    items = list(direct.itertuples(index=False))
    if engine.uses_batch_api("vague_indirect"):  # one Batch API job per step: stage-wide rounds
        gens = engine.run("vague_indirect", part, [generation(d) for d in items])
        first = [(d, res, *checked(d, res)) for d, res in zip(items, gens)]
        sels_it = iter(engine.run("vague_indirect", part, [selection(d, k[1]) for d, _, k, _ in first if k]))
        done = [(d, res, k, why, next(sels_it) if k else None) for d, res, k, why in first]
    else:  # each expression selected as soon as its own candidates are in and checked

        async def chain(d: Any):
            res = await engine.acall("vague_indirect", part, generation(d))
            k, why = await asyncio.to_thread(checked, d, res)  # embeddings: off the engine's loop
            sr = await engine.acall("vague_indirect", part, selection(d, k[1])) if k else None
            return d, res, k, why, sr

        done = engine.flow(f"vague_indirect {part}", items, chain)
    pending, sels = [], []
    for d, res, k, why, sr in done:
        if not res.ok:
            log.add(d.frame_id, "indirect_generation_failed", res.error_class or "LLMError", res.error or "")
        elif k is None and why.startswith("wrong_language"):
            log.add(d.frame_id, "wrong_language", "LanguageCheck", why)
        elif k is None:
            log.add(d.frame_id, "indirect_not_ambiguous", "AmbiguityCheck", why)
        elif sr is not None:
            pending.append((d, res, *k))
            sels.append(sr)
    rows = []
    for (d, res, cands_all, ok, notes), sr in zip(pending, sels):
        if not sr.ok:
            log.add(d.frame_id, "indirect_judge_failed", sr.error_class or "LLMError", sr.error or "")
            continue
        chosen, judge_keep = ok[int(sr.data["selected"])], True
        if int(sr.data["rating"]) < cfg["min_rating"]:
            if advisory(sr):
                notes = notes + [f"low_indirect_rating: rating={sr.data['rating']}<{cfg['min_rating']}"]
            else:  # the judge's drop; the row stays for the annotators, whose selection decides (§4.2.2)
                log.add(
                    d.frame_id,
                    "low_indirect_rating",
                    "RatingBelowMinimum",
                    f"rating={sr.data['rating']}<{cfg['min_rating']} ({chosen['strategy']}): "
                    f"{sr.data.get('rationale', '')} (the LLM judge's; people's selection decides)",
                )
                judge_keep = False
        rows.append(
            {
                "frame_id": d.frame_id,
                "batch": part,
                "strategy": chosen["strategy"],
                "indirect_expression": chosen["expression"],
                "superficial_interpretation": chosen["superficial_interpretation"],
                **{k: int(sr.data[k]) for k in ("consistency", "ambiguity", "naturalness", "rating")},
                "judge_rationale": sr.data.get("rationale"),
                "n_candidates_ambiguous": len(ok),
                "candidates": json.dumps(cands_all),
                "ambiguity_report": json.dumps(chosen["ambiguity"]),
                **_gen_cols(res, gen_p.hash),
                "select_prompt_hash": sel_p.hash,
                "advisory": _advisory_col(notes),
                "judge_keep": judge_keep,
            }
        )
    return pd.DataFrame(rows)


# -- options (§4.2.3)


def run_options(
    engine,
    embedder,
    store: TableStore,
    part: str,
    direct: pd.DataFrame,
    indirect: pd.DataFrame,
    cands: pd.DataFrame,
    cfg: dict[str, Any],
    log: RejectLog,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    fs_p, ne_p = load_prompt(PROMPT_FILES["fake_scene"]), load_prompt(PROMPT_FILES["nonexistent"])
    if indirect.empty:
        return pd.DataFrame(), pd.DataFrame()
    d_by = direct.set_index("frame_id")
    c_by = cands.set_index("frame_id")
    ind = indirect[indirect["frame_id"].isin(d_by.index) & indirect["frame_id"].isin(c_by.index)].reset_index(drop=True)
    # The fake-scene calls and the NE refine loop are independent: sent at once (a thread for
    # the former keeps `engine.run`, so a `batch_stages` entry still goes through the Batch API).
    fs_pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="vague-fs")
    fs_future = fs_pool.submit(
        engine.run,
        "vague_options",
        part,
        [
            LLMRequest(
                i.frame_id,
                fs_p,
                {
                    "indirect_expression": i.indirect_expression,
                    "subject": d_by.loc[i.frame_id, "subject"],
                    "intention": d_by.loc[i.frame_id, "intention"],
                },
            )
            for i in ind.itertuples(index=False)
        ],
    )
    present = {f: as_list(c_by.loc[f, "present_objects"]) for f in ind["frame_id"]}

    def ne_absent(req: LLMRequest, data: dict[str, Any]) -> Verdict | None:
        d = d_by.loc[req.item_id]
        probs = logic.ne_problems(
            data["substitute_object"],
            data["ne_interpretation"],
            d["object"],
            present[req.item_id],
            embedder,
            cfg["ne_similarity_threshold"],
        )
        if not probs:
            return None
        return Verdict(
            "major",
            "; ".join(p[1] for p in probs) + ". Choose an object that is NOT in the image "
            "and do not name the original object.",
            probs[0][0],
        )

    ne_reqs = [
        LLMRequest(
            f,
            ne_p,
            {
                "intention": d_by.loc[f, "intention"],
                "subject": d_by.loc[f, "subject"],
                "action": d_by.loc[f, "action"],
                "object": d_by.loc[f, "object"],
                "present_objects": present[f],
            },
            _image(store, c_by.loc[f, "image_path"]),
        )
        for f in ind["frame_id"]
    ]
    try:
        ne_run = refine(engine, "vague_options", part, ne_reqs, checks=[ne_absent], max_rounds=cfg["ne_max_rounds"])
        fs = fs_future.result()
    finally:
        fs_pool.shutdown(wait=True)
    ne_by = {o.item_id: o for o in ne_run.outcomes}
    rows = []
    for i, fres in zip(ind.itertuples(index=False), fs):
        f, d = i.frame_id, d_by.loc[i.frame_id]
        if not fres.ok:
            log.add(f, "fs_generation_failed", fres.error_class or "LLMError", fres.error or "")
            continue
        ne = ne_by[f]
        if not ne.accepted:
            reason = (
                ne.verdict.source
                if ne.verdict is not None and ne.verdict.source.startswith("ne_")
                else f"ne_{ne.reason}"
            )
            log.add(f, reason, "NonexistentEntity", ne.detail or "")
            continue
        common = {"frame_id": f, "batch": part}
        rows += [
            {
                **common,
                "option_type": "correct",
                "text": d["intention"],
                "prompt_name": d["prompt_name"],
                "prompt_hash": d["prompt_hash"],
                "model": d["model"],
                "backend": d["backend"],
            },
            {
                **common,
                "option_type": "SU",
                "text": i.superficial_interpretation,
                "prompt_name": i.prompt_name,
                "prompt_hash": i.prompt_hash,
                "model": i.model,
                "backend": i.backend,
            },
            {
                **common,
                "option_type": "FS",
                "text": fres.data["fake_scene_interpretation"],
                "fake_caption": fres.data["fake_caption"],
                **_gen_cols(fres, fs_p.hash),
            },
            {
                **common,
                "option_type": "NE",
                "text": ne.data["ne_interpretation"],
                "substitute_object": ne.data["substitute_object"],
                "rounds": ne.rounds,
                **_gen_cols(ne.result, ne_p.hash),
            },
        ]
    return pd.DataFrame(rows), ne_run.attempts_frame()


# -- items (§3.1)


def channels(store: TableStore) -> dict[str, str]:
    v = store.read("videos") if store.exists("videos") else pd.DataFrame()
    if "item_id" not in v and "video_id" in v:  # the videos contract names it video_id
        v = v.rename(columns={"video_id": "item_id"})
    if v.empty or "item_id" not in v:
        return {}
    ch = v["channel"] if "channel" in v else pd.Series([None] * len(v))
    if "uploader" in v:
        ch = ch.fillna(v["uploader"])
    return {str(i): c for i, c in zip(v["item_id"], ch) if isinstance(c, str) and c}


def build_items(
    part: str,
    cands: pd.DataFrame,
    direct: pd.DataFrame,
    indirect: pd.DataFrame,
    options: pd.DataFrame,
    cfg: dict[str, Any],
    seed: str,
    chan: dict[str, str],
    log: RejectLog,
) -> pd.DataFrame:
    if options.empty:
        return pd.DataFrame()
    c_by, d_by, i_by = (x.set_index("frame_id") for x in (cands, direct, indirect))
    frames = [
        f for f in sorted(options["frame_id"].unique()) if f in c_by.index and f in d_by.index and f in i_by.index
    ]
    opts_by = {f: {r["option_type"]: r for r in g.to_dict("records")} for f, g in options.groupby("frame_id")}
    notes: dict[str, list[str]] = {f: [] for f in frames}
    good = []
    for f in frames:
        o = opts_by[f]
        missing = [t for t in logic.OPTION_TYPES if t not in o]
        if missing:
            log.add(f, "missing_options", "ItemBuild", f"no {missing} option")
            continue
        # the official generation prompts cap every option at 15 words (options.max_words)
        long = logic.long_options({t: o[t]["text"] for t in logic.OPTION_TYPES}, int(cfg.get("max_words", 15)))
        if long:
            if not any(advisory(o[t]) for t in logic.OPTION_TYPES):
                log.add(f, "option_too_long", "ItemBuild", f"over {cfg.get('max_words', 15)} words: {long}")
                continue
            notes[f].append(f"option_too_long: {long}")  # placeholder options: recorded, kept
        dups = mcq.duplicate_options([o[t]["text"] for t in logic.OPTION_TYPES], cfg["duplicate_threshold"])
        if dups:
            p = dups[0]
            why = f"{logic.OPTION_TYPES[p.i]} ≈ {logic.OPTION_TYPES[p.j]} (similarity {p.similarity})"
            if not any(advisory(o[t]) for t in logic.OPTION_TYPES):
                log.add(f, "duplicate_options", "ItemBuild", why)
                continue
            notes[f].append(f"duplicate_options: {why}")  # placeholder options: recorded, kept
        good.append(f)
    # Correct positions balanced within the batch (counts differ by ≤ 1), order of the rest seeded.
    plan = mcq.balanced_positions([logic.item_id(f) for f in good], len(logic.OPTION_TYPES), seed=(seed, part))
    rows = []
    for f in good:
        cand = dict(c_by.loc[f], frame_id=f)
        row = logic.build_item(
            cand,
            dict(d_by.loc[f]),
            dict(i_by.loc[f]),
            opts_by[f],
            plan[logic.item_id(f)],
            seed,
            chan.get(cand["item_id"]),
        )
        adv = [n for src in (d_by, i_by) for n in _notes(src.loc[f].get("advisory"))] + notes[f]
        if adv:
            row["extra"] = json.dumps(dict(json.loads(row["extra"]), advisory=adv))
        rows.append(row)
    return pd.DataFrame(rows)


def _notes(value: Any) -> list[str]:
    return json.loads(value) if isinstance(value, str) and value else []
