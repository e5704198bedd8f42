"""VAGUE recipe assets (Nam et al., §4): candidates → direct → indirect → options → items.

Wiring only: each asset reads its inputs for the batch (people's protocol decisions where they
decided), calls the stage in ``logic/stages.py`` (or ``logic/logic.py``) with the LLM engine, and
publishes its table with rejects. Every LLM row carries prompt_hash, model and backend; calls go
to ``llm_calls`` (and NE refine attempts to ``llm_attempts``).
"""

import json
from typing import Any

import dagster as dg
import pandas as pd

from assets.common import StageRun
from assets.recipes.asset_builder import recipe_asset
from forge.benchmarks.settings import recipe_settings, with_profile
from forge.llm.stub import ADVISORY_NOTE, advisory
from forge.protocol import flow, steps
from forge.provenance.versioning import content_hash
from forge.review import regenerate
from forge.splits.config import stage_settings
from forge.storage import RejectLog, TableStore
from forge.storage.yaml_files import read_yaml
from resources.embedder import EmbedderResource
from resources.llm import LLMResource
from resources.storage import StorageResource

from .logic import logic
from .logic import protocol as proto
from .logic.objects import VISION_CONFIG, object_filter
from .logic.stages import PROMPT_FILES, build_items, channels, run_direct, run_indirect, run_options
from .spec import SPEC as VAGUE

VERSION = "1"
GROUP = "vague"


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
    return (read_yaml(VISION_CONFIG) or {}).get("physical_objects")


def _version(section: str, prompts: list[str] = ()) -> str:
    cfg = settings()
    return content_hash(VERSION, cfg.get(section), cfg.get("seed"), files=[PROMPT_FILES[p] for p in prompts])


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


# ----------------------------------------------------------------------------- candidates


@recipe_asset(
    group=GROUP,
    deps=["rich_scenes", "frames", "person_indicators", "tags", "detections"],
    code_version=content_hash(_version("candidates"), physical_objects_config()),
    reject_ceiling=1.0,  # a frame filter (persons, tags, blur, spacing): dropping most frames is normal
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
    tries = (
        regenerate.attempts(run.store, VAGUE, stage_settings(VAGUE).review_settings(), "vague_direct")
        if config.regenerate_rejected
        else {}
    )
    run.map_partitions(  # batches at once on the engine's one budget
        lambda part, log: run.put(
            part, run_direct(run.engine, run.store, part, _read(run.store, "vague_candidates", part), cfg, log, tries)
        )
    )
    md = {"advisory_rows": int(run.frame()["advisory"].notna().sum())}
    md["regenerated_images"] = len(tries)  # images whose intention was written again (seed = attempt)
    return run.publish(md)


# ----------------------------------------------------------------------------- indirect (§4.2.2)


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
    tries = (
        regenerate.attempts(store, VAGUE, stage_settings(VAGUE).review_settings(), "vague_indirect")
        if config.regenerate_rejected
        else {}
    )

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
