"""VAGUE recipe assets (Nam et al., §4): candidates → direct → indirect → options → items.

Thin: each asset reads its inputs for the batch, calls ``assets.recipes.vague.logic.logic`` and
the LLM engine, and publishes its table with rejects. Every LLM row carries prompt_hash,
model and backend; calls go to ``llm_calls`` (and NE refine attempts to ``llm_attempts``).

Stub output (``forge.llm.stub.advisory``): judge ratings, the ambiguity check, the NE check
and duplicate options on placeholder text are recorded (the row's ``advisory`` column, the
items' ``extra.advisory``, ``llm_attempts``) but never reject, so the demo yields items.
"""

import asyncio
import concurrent.futures
import json
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import yaml

from assets.common import StageRun
from assets.recipes.asset_builder import recipe_asset
from forge.benchmarks.settings import recipe_settings, with_profile
from forge.checks import mcq
from forge.llm.prompts import load_prompt
from forge.llm.refine import Verdict, refine
from forge.llm.stub import ADVISORY_NOTE, advisory
from forge.llm.types import ImageInput, LLMRequest, LLMResult
from forge.protocol import flow, steps
from forge.provenance.versioning import content_hash
from forge.review import regenerate
from forge.storage import RejectLog, TableStore
from resources.embedder import EmbedderResource
from resources.llm import LLMResource
from resources.storage import StorageResource

from .logic import logic
from .logic import protocol as proto
from .logic.objects import VISION_CONFIG, object_filter
from .spec import SPEC as VAGUE

VERSION = "1"
GROUP = "vague"
PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
PROMPT_FILES = {
    "direct": PROMPTS_DIR / "direct.yaml",
    "rate_direct": PROMPTS_DIR / "rate_direct.yaml",
    "indirect": PROMPTS_DIR / "indirect.yaml",
    "select_indirect": PROMPTS_DIR / "select_indirect.yaml",
    "fake_scene": PROMPTS_DIR / "fake_scene.yaml",
    "nonexistent": PROMPTS_DIR / "nonexistent.yaml",
}


class DirectConfig(dg.Config):
    # "Regenerate rejected" (docs/review.md): an image whose correct option (the intention, §4.2.1)
    # reviewers rejected as wrong_gold gets its direct expression and intention written again with a
    # new seed (indirect expression, options and item follow; the others come from the cache).
    regenerate_rejected: bool = True


class IndirectConfig(dg.Config):
    # "Regenerate rejected" (docs/review.md): images whose items reviewers rejected get their indirect
    # expression written again with a new seed (options follow; the others come from the cache).
    # False replays the first, rejected replies.
    regenerate_rejected: bool = True


def settings() -> dict[str, Any]:
    """assets/recipes/vague/config.yaml under the active profile (read per use: a profile change applies)."""
    return recipe_settings("vague")


def physical_objects_config() -> Any:
    """config/vision.yaml ``physical_objects`` (the candidates' code version follows edits to it)."""
    return (yaml.safe_load(VISION_CONFIG.read_text()) or {}).get("physical_objects")


def _version(section: str, prompts: list[str] = ()) -> str:
    cfg = settings()
    return content_hash(VERSION, cfg.get(section), cfg.get("seed"), files=[PROMPT_FILES[p] for p in prompts])


def _lst(v: Any) -> list:
    return [] if v is None else list(v)


def _read(store: TableStore, table: str, part: str) -> pd.DataFrame:
    return store.read(table, parts=[part])


def _direct(store: TableStore, part: str) -> pd.DataFrame:
    """vague_direct as the later stages use it: people's ratings (protocol step) where they rated."""
    return proto.rated_direct(_read(store, "vague_direct", part), steps.decisions(store, VAGUE, proto.DIRECT))


def _indirect(store: TableStore, part: str) -> pd.DataFrame:
    """vague_indirect as the later stages use it: people's selection and rating where they selected."""
    return proto.selected_indirect(_read(store, "vague_indirect", part), steps.decisions(store, VAGUE, proto.INDIRECT))


def _protocol_decisions(store: TableStore) -> dict[str, dict[str, Any]]:
    return {name: steps.decisions(store, VAGUE, name) for name in (proto.DIRECT, proto.INDIRECT)}


def _image(store: TableStore, rel: str) -> list[ImageInput]:
    return [ImageInput(path=store.data_dir / rel)]


def _advisory_col(notes: list[str]) -> str | None:
    """What the verdicts/checks would have rejected, for rows kept because their output is stub."""
    return json.dumps(notes) if notes else None


def _gen_cols(res: LLMResult, base_hash: str) -> dict[str, Any]:
    return {"prompt_name": res.prompt_name, "prompt_hash": base_hash, "model": res.model, "backend": res.backend}


# ----------------------------------------------------------------------------- candidates


@recipe_asset(
    group=GROUP,
    deps=["rich_scenes", "frames", "person_indicators", "tags", "detections"],
    code_version=content_hash(_version("candidates"), physical_objects_config()),
    description="VAGUE §4.1: candidate frames from the selected rich scenes (kind, blur, persons, tags, "
    "no neighbouring frames, per-batch cap) with the image the model sees (person indicators).",
)
def vague_candidates(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
    run, cfg = StageRun(context, storage), settings()["candidates"]
    store = run.store
    objects = object_filter(cfg.get("object_filter", "physical_objects"))  # §4.1.2, every tagger backend
    for part, log in run.partitions():
        df, rejects = logic.select_candidates(
            _read(store, "frames", part),
            _read(store, "rich_scenes", part),
            _read(store, "person_indicators", part),
            _read(store, "tags", part),
            _read(store, "detections", part),
            kinds=cfg["kinds"],
            min_persons=cfg["min_persons"],
            min_tags=cfg["min_tags"],
            min_blur_var=cfg["min_blur_var"],
            min_gap_s=cfg["min_gap_s"],
            max_per_batch=cfg["max_per_batch"],
            object_vocabulary=cfg["object_vocabulary"],
            object_filter=objects,
        )
        for r in rejects:
            log.add(r["frame_id"], r["reason"], "CandidateFilter", r["detail"], r.get("related_id"))
        run.put(part, df)
    allc = run.frame()
    md = {
        "plain_image_fallbacks": int((allc.get("image_kind", pd.Series(dtype=str)) == "plain").sum()),
        "caption_vocabulary": int((allc.get("object_source", pd.Series(dtype=str)) == "caption").sum()),
        # RAM's open tags (§4.1.2) or the YOLO class-name fallback: the NE check is only as good as this vocabulary
        "tagger_backends": dg.MetadataValue.json(
            allc.get("tagger_backend", pd.Series(dtype=str)).fillna("none").value_counts().to_dict()
        ),
    }
    return run.publish(md)


# ----------------------------------------------------------------------------- direct (§4.2.1)


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
        labels, objects = _lst(c.person_labels), _lst(c.objects)
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
        problems = logic.triple_problems(data, _lst(c.person_labels), _lst(c.objects)) if data else []
        if problems or not res.ok:
            return None, problems
        return dict(data, object=logic.match_object(data["object"], _lst(c.objects))), []

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


@recipe_asset(
    group=GROUP,
    llm=True,
    deps=["vague_candidates"],
    code_version=_version("direct", ["direct", "rate_direct"]),
    description="VAGUE §4.2.1: direct expression + (subject, action, object) with object ∈ the frame's tags "
    "(enforced in code), rated 1-5 for relevance and solvability by an LLM judge; keep ≥ the minimum.",
)
def vague_direct(
    context: dg.AssetExecutionContext, config: DirectConfig, storage: StorageResource, llm: LLMResource
) -> dg.MaterializeResult:
    run, cfg = StageRun(context, storage, llm), settings()["direct"]
    # read, not a dep: the verdicts are downstream of these intentions (a dep would be a cycle)
    tries = regenerate.attempts(run.store, VAGUE, "vague_direct") if config.regenerate_rejected else {}
    run.map_partitions(  # batches at once on the engine's one budget
        lambda part, log: run.put(
            part, run_direct(run.engine, run.store, part, _read(run.store, "vague_candidates", part), cfg, log, tries)
        )
    )
    md = {"advisory_rows": int(run.frame()["advisory"].notna().sum())}
    md["regenerated_images"] = len(tries)  # images whose intention was written again (seed = attempt)
    return run.publish(md)


# ----------------------------------------------------------------------------- indirect (§4.2.2)


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


@recipe_asset(
    group=GROUP,
    llm=True,
    deps=["vague_direct"],
    code_version=_version("indirect", ["indirect", "select_indirect"]),
    description="VAGUE §4.2.2: three indirect candidates (sarcasm, humour, meme/idiom) + superficial readings; "
    "ambiguity checked in code (lemmas + MiniLM similarity); one selected and rated, keep ≥ the minimum.",
)
def vague_indirect(
    context: dg.AssetExecutionContext,
    config: IndirectConfig,
    storage: StorageResource,
    llm: LLMResource,
    embedder: EmbedderResource,
) -> dg.MaterializeResult:
    run, emb = StageRun(context, storage, llm), embedder.embedder()  # the embedder serializes its own calls
    store, cfg = run.store, settings()["indirect"]
    # read, not a dep: the verdicts are downstream of these expressions (a dep would be a cycle)
    tries = regenerate.attempts(store, VAGUE, "vague_indirect") if config.regenerate_rejected else {}

    rated = steps.decisions(store, VAGUE, proto.DIRECT)
    raters = flow.people_of(store, VAGUE, proto.DIRECT)  # who rated an expression below the threshold

    def indirect(part: str, log: RejectLog) -> None:  # batches at once on the engine's one budget
        direct, cands = _direct(store, part), _read(store, "vague_candidates", part)
        for fid, who in flow.dropped_by_people(_read(store, "vague_direct", part), "frame_id", rated, raters):
            log.add(fid, flow.DROPPED, "ProtocolStep", f"direct_rating: rated below the threshold by {who}")
        df = run_indirect(run.engine, emb, store, part, direct, cands, cfg, log, tries)
        if len(df):  # who decided the rating this expression was written from
            df["decided_by"] = [json.dumps(flow.decided_by({proto.DIRECT: rated}, f)) for f in df["frame_id"]]
        run.put(part, df)

    run.map_partitions(indirect)
    md = {"embedder": emb.name, "advisory_rows": int(run.frame()["advisory"].notna().sum())}
    md["regenerated_images"] = len(tries)  # images whose expression was written again (seed = attempt)
    return run.publish(md)


# ----------------------------------------------------------------------------- options (§4.2.3)


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
    present = {f: _lst(c_by.loc[f, "present_objects"]) for f in ind["frame_id"]}

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


@recipe_asset(
    group=GROUP,
    llm=True,
    deps=["vague_indirect"],
    code_version=_version("options", ["fake_scene", "nonexistent"]),
    description="VAGUE §4.2.3: counterfactual options FS (fake caption → interpretation), SU (superficial "
    "reading), NE (object replaced by an absent, expected one; absence verified, regenerated with "
    "feedback up to K rounds) plus the correct one.",
)
def vague_options(
    context: dg.AssetExecutionContext, storage: StorageResource, llm: LLMResource, embedder: EmbedderResource
) -> dg.MaterializeResult:
    run, emb = StageRun(context, storage, llm), embedder.embedder()  # the embedder serializes its own calls
    store, cfg = run.store, settings()["options"]

    def options(part: str, log: RejectLog) -> None:  # batches at once on the engine's one budget
        direct, indirect = _direct(store, part), _indirect(store, part)
        df, att = run_options(
            run.engine, emb, store, part, direct, indirect, _read(store, "vague_candidates", part), cfg, log
        )
        run.put(part, df)
        run.add_attempts(att)

    run.map_partitions(options)
    return run.publish(attempts_key="ne_attempts", record_attempts=True)


# ----------------------------------------------------------------------------- items (§3.1)


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


@recipe_asset(
    group=GROUP,
    deps=["vague_options", "vague_candidates", "vague_direct", "vague_indirect"],
    code_version=_version("options"),
    description="VAGUE benchmark items: 4-option MCQ (correct, FS, SU, NE) with option types kept, correct "
    "positions balanced per batch, duplicate options rejected. Common benchmark-item columns.",
)
def vague_items(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
    run = StageRun(context, storage)
    store = run.store
    chan = channels(store)
    for part, log in run.partitions():
        cfg = settings()
        items = build_items(
            part,
            _read(store, "vague_candidates", part),
            _direct(store, part),
            _indirect(store, part),
            _read(store, "vague_options", part),
            cfg["options"],
            cfg["seed"],
            chan,
            log,
        )
        # who decided the protocol steps each item was built on (the image's rating and selection)
        items = flow.mark_items(items, lambda r: str(r["unit_id"]), _protocol_decisions(store))
        run.put(part, with_profile(items, "vague"))
    allr = run.frame()
    md: dict[str, Any] = {}
    if len(allr) and allr["backend"].map(advisory).any():
        md["stub_verdicts"] = ADVISORY_NOTE
    run.show_items()
    md |= run.describe(
        lambda df: {
            "by_category": dg.MetadataValue.json(df["category"].value_counts().to_dict()),
            "answers": dg.MetadataValue.json(df["answer"].value_counts().sort_index().to_dict()),
        }
    )
    return run.publish(md)
