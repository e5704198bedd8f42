"""The review stages of one benchmark, Dagster-free: push tasks, read verdicts back, gate the
export. ``assets/review`` wraps them; ``forge/splits/stages.run_export`` calls ``export_gate``.

Tables: ``review_tasks`` (live Label Studio tasks per benchmark, kinds ``review`` /
``adjudication`` / ``human``), ``verdicts`` (one row per annotation), ``human_answers`` (the
blind answers of the human baseline). One file per benchmark each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec
from forge.review import gate, sync
from forge.review.client import LabelStudio
from forge.review.config import review_spec
from forge.review.items import box_predictions, task_data
from forge.review.labelconfig import review_config
from forge.review.reprobe import Reprobe, reprobe
from forge.review.spec import ReviewPolicy, ReviewSpec
from forge.review.verdicts import VERDICT_COLUMNS, merge, verdict_rows
from forge.splits.export import existing_versions
from forge.splits.gates import LIST_COLUMNS, _lst
from forge.storage import RejectLog, TableStore

REJECT_REASON = "reviewer_rejected"  # rejects.reason; the reviewer's own reason leads the detail


@dataclass
class StageOut:
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    rejects: list[RejectLog] = field(default_factory=list)
    engine: Any = None  # the LLM engine, when the stage called one (its calls go to llm_calls)


def settings(spec: BenchmarkSpec) -> ReviewSpec:
    return review_spec(spec.name, spec.review)


def read(store: TableStore, table: str, name: str) -> pd.DataFrame:
    return store.read(table, parts=[name]) if store.exists(table) else pd.DataFrame()


def gated_items(store: TableStore, name: str) -> pd.DataFrame:
    df = read(store, "gated_items", name)
    for c in LIST_COLUMNS:
        if c in df:
            df[c] = df[c].map(_lst)
    return df


def next_version(store: TableStore, name: str) -> str:
    """The export version the current review round gates (the next one to be written)."""
    versions = existing_versions(store.data_dir / "exports" / name)
    return f"v{(versions[-1][0] if versions else 0) + 1}"


def clip_paths(store: TableStore) -> dict[str, str]:
    clips = store.read("clips", columns=["clip_id", "path"]) if store.exists("clips") else pd.DataFrame()
    return {str(r.clip_id): str(r.path) for r in clips.itertuples() if isinstance(r.path, str) and r.path}


def resolution(
    store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, items: pd.DataFrame | None = None
) -> gate.Resolution:
    items = gated_items(store, spec.name) if items is None else items
    v = read(store, "verdicts", spec.name)
    v = v.reindex(columns=VERDICT_COLUMNS) if len(v) else pd.DataFrame(columns=VERDICT_COLUMNS)
    return gate.resolve(items, v, rs, store.data_dir)


def project_settings(rs: ReviewSpec, overlap: int, description: str) -> dict[str, Any]:
    return {
        "maximum_annotations": overlap,
        "overlap_cohort_percentage": 100,
        "show_collab_predictions": True,  # the item's boxes are pre-drawn and editable
        "description": description,
    }


def _wanted(
    items: pd.DataFrame, rs: ReviewSpec, clips: dict[str, str], kind: str, extra: dict[str, dict] | None = None
) -> dict[str, sync.Wanted]:
    out = {}
    for it in items.to_dict("records"):
        data = task_data(it, rs, clips.get(str(it.get("unit_id"))), kind)
        data.update((extra or {}).get(str(it["item_id"]), {}))
        preds = box_predictions(it) if rs.boxes and kind != "human" else []
        out[str(it["item_id"])] = sync.Wanted(data, preds)
    return out


def prior_text(g: pd.DataFrame) -> str:
    # a missing reason is NaN in the table (truthy): only a real one is shown, never "accept (nan)"
    return "\n".join(
        f"{r.reviewer}: {r.verdict}" + (f" ({r.reason})" if isinstance(r.reason, str) and r.reason else "")
        for r in g.itertuples()
    )


def run_review_tasks(store: TableStore, spec: BenchmarkSpec, ls: LabelStudio | None, note: str = "") -> StageOut:
    """Push every item that needs review (not yet decided at its current revision) to this
    round's project, and disputed items to the adjudication project. ``ls`` None (the tool is
    down, policy advisory): the recorded tasks stay as they are, with ``note``."""
    rs = settings(spec)
    out = StageOut(metadata={"policy": str(rs.policy), "reviewers_per_item": rs.reviewers})
    prev = read(store, "review_tasks", spec.name)
    if rs.policy == ReviewPolicy.OFF or ls is None:
        out.metadata["note"] = note or f"review policy off for {spec.name}: nothing pushed"
        out.tables["review_tasks"] = prev if len(prev) else pd.DataFrame(columns=sync.TASK_COLUMNS)
        return out
    ls.ensure_up()
    res = resolution(store, spec, rs)
    recorded = set(res.verdicts["verdict_id"].astype(str))
    clips = clip_paths(store)
    items = res.items
    todo = items[items["review_status"].isin(["pending"])]
    round_ = next_version(store, spec.name)
    media_root = str(store.data_dir.resolve() / "media")
    frames, counts = [], {}
    prev = prev if len(prev) else pd.DataFrame(columns=sync.TASK_COLUMNS)
    for kind, subset, overlap, title in (
        ("review", todo, rs.reviewers, f"{spec.title} review · {spec.name} {round_}"),
        ("adjudication", items[items["review_status"] == "disputed"], 1, f"{spec.title} adjudication · {spec.name}"),
    ):
        config = review_config(rs, adjudication=kind == "adjudication")
        desc = f"Subtext Forge {kind} of {spec.title} ({spec.name}); {rs.note}".strip()
        project = ls.ensure_project(title, config, **project_settings(rs, overlap, desc))
        ls.ensure_local_storage(int(project["id"]), media_root)
        extra = None
        if kind == "adjudication":
            v = res.verdicts[~res.verdicts["stale"].astype(bool)]
            extra = {str(i): {"prior_text": prior_text(g)} for i, g in v.groupby("item_id")}
        wanted = _wanted(subset, rs, clips, kind, extra)
        keep = set(items["item_id"].astype(str)) - set(wanted)
        rows, c = sync.push(ls, spec.name, kind, project, wanted, prev, recorded, keep)
        frames.append(rows)
        counts[kind] = c
    out.tables["review_tasks"] = pd.concat([prev[prev["kind"] == "human"], *frames], ignore_index=True)
    out.metadata.update({"round": round_, "pushed": counts, **gate.coverage(res)})
    return out


def run_verdicts(
    store: TableStore, spec: BenchmarkSpec, ls: LabelStudio | None, note: str = "", probe: Reprobe | None = None
) -> StageOut:
    """Read every annotation back, merge with the recorded verdicts, apply edits, reject what
    reviewers rejected (stage ``human_review``). ``ls`` None (the tool is down, policy
    advisory): the recorded verdicts are re-resolved, nothing read, with ``note``. ``probe``:
    edited multiple-choice revisions re-enter the text-only probe (``forge/review/reprobe.py``)."""
    rs = settings(spec)
    tasks = read(store, "review_tasks", spec.name)
    prev = read(store, "verdicts", spec.name)
    out = StageOut()
    polled: list[dict[str, Any]] = []
    if ls is None:
        merged = prev.reindex(columns=VERDICT_COLUMNS) if len(prev) else pd.DataFrame(columns=VERDICT_COLUMNS)
    else:
        if len(tasks):
            ls.ensure_up()
        by_kind, live = sync.poll(ls, tasks, ("review", "adjudication"))
        users = ls.users() if len(tasks) else {}
        polled = [
            r
            for kind, projects in by_kind.items()
            for pid, ts in projects
            for r in verdict_rows(spec.name, kind, pid, ts, users, rs.reasons)
        ]
        merged = merge(prev, polled, live, {int(t) for t in tasks["task_id"]} if len(tasks) else set())
    items = gated_items(store, spec.name)
    res = gate.resolve(items, merged, rs, store.data_dir)
    if probe is not None:
        probed, out.engine = reprobe(res.items, res.verdicts, probe, spec.asset("verdicts"), spec.name)
        res = gate.resolve(items, probed, rs, store.data_dir) if out.engine is not None else res
    out.tables["verdicts"] = res.verdicts
    log = RejectLog(gate.STAGE, spec.name)
    for item_id, why in sorted(res.reasons.items()):
        who = sorted(
            res.verdicts.loc[(res.verdicts["item_id"] == item_id) & (res.verdicts["verdict"] == "reject"), "reviewer"]
            .astype(str)
            .unique()
        )
        log.add(item_id, REJECT_REASON, detail=f"{why}: rejected by {', '.join(who) or 'a reviewer'}")
    out.rejects = [log]
    out.metadata = gate.summary(res, rs, rs.policy)
    out.metadata["polled_verdicts"] = len(polled)
    if note:
        out.metadata["note"] = note
    return out


def export_gate(store: TableStore, spec: BenchmarkSpec, gated: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, Any]]:
    """What the export publishes under the benchmark's review policy, and the card's review
    figures. Items carry their current revision (edits applied, ``extra.edited_by``)."""
    rs = settings(spec)
    if gated.empty:
        return gated, {"policy": str(rs.policy)}
    res = resolution(store, spec, rs, gated)
    kept, left_out = gate.export_filter(res, rs.policy)
    info = gate.summary(res, rs, rs.policy)
    info.update({"held_back": len(left_out["held_back"]), "rejected_ids": left_out["rejected"][:50]})
    info["human_reviewed"] = (
        rs.policy != ReviewPolicy.OFF
        and info["items_needing_review"] > 0
        and info["reviewed"] == info["items_needing_review"]
    )
    return kept[gated.columns.tolist()], info
