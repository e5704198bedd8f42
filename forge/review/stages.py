"""The review stages of one benchmark, Dagster-free: push tasks, read verdicts back, gate the
export. ``assets/review`` wraps them; ``forge/export/stages.run_export`` calls ``export_gate``.

Tables: ``review_tasks`` (live Label Studio tasks per benchmark, kinds ``review`` /
``adjudication`` / ``returned`` / ``human``), ``review_task_ledger`` (every task a review push
made, found or deleted; append-only, ``forge/people/ledger.py``), ``verdicts`` (one row per
annotation), ``human_answers`` (the blind answers of the human baseline). One file per benchmark each.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from forge.benchmarks.review_spec import ReviewPolicy, ReviewSpec
from forge.benchmarks.spec import BenchmarkSpec
from forge.checks.nli import NLIBackend
from forge.items.fields import LIST_COLUMNS, lst
from forge.people import identity as ident
from forge.people import ledger, project, reconcile
from forge.people import read as tool
from forge.people.client import LabelStudio, ReviewServerDown
from forge.people.push import TASK_COLUMNS, Plan, Progress, PushInterrupted, Wanted, execute, plan
from forge.review import gate, loop, units
from forge.review.items import box_predictions, task_data
from forge.review.labelconfig import review_config
from forge.review.reprobe import Reprobe, reprobe
from forge.review.status import review_status
from forge.review.verdicts import VERDICT_COLUMNS, merge, verdict_rows
from forge.storage import RejectLog, TableStore
from forge.storage.result import StageResult

REJECT_REASON = "reviewer_rejected"  # rejects.reason; the reviewer's own reason leads the detail


def read(store: TableStore, table: str, name: str) -> pd.DataFrame:
    return store.read(table, parts=[name]) if store.exists(table) else pd.DataFrame()


def gated_items(store: TableStore, name: str) -> pd.DataFrame:
    df = read(store, "gated_items", name)
    for c in LIST_COLUMNS:
        if c in df:
            df[c] = df[c].map(lst)
    return df


def clip_paths(store: TableStore) -> dict[str, str]:
    clips = store.read("clips", columns=["clip_id", "path"]) if store.exists("clips") else pd.DataFrame()
    return {str(r.clip_id): str(r.path) for r in clips.itertuples() if isinstance(r.path, str) and r.path}


def resolution(
    store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, items: pd.DataFrame | None = None
) -> gate.Resolution:
    items = gated_items(store, spec.name) if items is None else items
    v = read(store, "verdicts", spec.name)
    v = v.reindex(columns=VERDICT_COLUMNS) if len(v) else pd.DataFrame(columns=VERDICT_COLUMNS)
    return gate.resolve(items, v, rs, store.data_dir, hooks=spec.hooks)


def _wanted(
    items: pd.DataFrame, rs: ReviewSpec, clips: dict[str, str], kind: str, extra: dict[str, dict] | None = None
) -> dict[str, Wanted]:
    out = {}
    for it in items.to_dict("records"):
        data = task_data(it, rs, clips.get(str(it.get("unit_id"))), kind)
        data.update((extra or {}).get(str(it["item_id"]), {}))
        preds = box_predictions(it) if rs.boxes and kind != "human" else []
        out[str(it["item_id"])] = Wanted(data, preds)
    return out


def prior_text(g: pd.DataFrame) -> str:
    # a missing reason is NaN in the table (truthy): only a real one is shown, never "accept (nan)"
    return "\n".join(
        f"{r.reviewer}: {r.verdict}" + (f" ({r.reason})" if isinstance(r.reason, str) and r.reason else "")
        for r in g.itertuples()
    )


def run_review_tasks(
    store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, ls: LabelStudio | None, note: str = ""
) -> StageResult:
    """Push every item that needs review (not yet decided at its current revision) to the
    benchmark's one review project, disputed items to its adjudication project, and refused
    verdicts back to their reviewers (``returned``); append what was done to the task ledger.
    ``ls`` None (the tool is down, policy advisory): the recorded tasks stay as they are, with
    ``note``. Label Studio stopping mid-push: the ledger keeps the tasks made so far and
    ``PushInterrupted`` says how many; the next push continues. ``rs``: the review settings in
    effect (``StageSettings.review``)."""
    out = StageResult(metadata={"policy": str(rs.policy), "reviewers_per_item": rs.reviewers})
    prev = read(store, "review_tasks", spec.name)
    prev = prev if len(prev) else pd.DataFrame(columns=TASK_COLUMNS)
    book = loop.load_ledger(store, spec.name)
    if rs.policy == ReviewPolicy.OFF or ls is None:
        out.metadata["note"] = note or f"review policy off for {spec.name}: nothing pushed"
        out.tables.update({"review_tasks": {spec.name: prev}, loop.LEDGER: {spec.name: book}})
        out.tables[loop.RECONCILIATION] = {spec.name: reconcile.table(store, loop.RECONCILIATION, spec.name, {})[0]}
        return out
    ls.ensure_up()
    inst = ident.instance_of(ls.projects()) or ident.new_id()  # this database's (forge/people/identity.py)
    projects = {k: _project(ls, store, spec, rs, k, inst) for k in ("review", "adjudication")}
    found = ls.project_by_title(loop.title(spec, "returned"))
    projects.update({"returned": ident.ensure_stamp(ls, found, inst)} if found else {})
    titles = {int(p["id"]): str(p["title"]) for p in ls.projects()}
    looked = {k: {*([int(projects[k]["id"])] if k in projects else []), *ledger.projects(book, k)} for k in loop.KINDS}
    seen = tool.view(ls, [spec.name], book, looked)  # only tasks provably this benchmark's count
    events, figures = reconcile.reconcile(spec.name, book, seen, titles)
    book = ledger.append(book, events)
    recon, said = reconcile.table(store, loop.RECONCILIATION, spec.name, figures)
    out.tables[loop.RECONCILIATION] = {spec.name: recon}
    out.metadata["reconciliation"] = {**figures, **({"message": said} if said else {})}
    live = seen.ours
    live_ids = seen.live_ids()
    # a task deleted in the tool makes its verdicts stale before anything is decided, so the push
    # recreates it whether or not the verdicts were read since (the read marks them the same way)
    verdicts = merge(read(store, "verdicts", spec.name), [], live_ids, ledger.pushed_ids(book))
    res = gate.resolve(gated_items(store, spec.name), verdicts, rs, store.data_dir, hooks=spec.hooks)
    wanted = _loop_wanted(spec.name, res, rs, clip_paths(store))
    wanted = {k: project.served(store, w) for k, w in wanted.items()}  # pre-signed media URLs on a bucket
    if wanted["returned"] and "returned" not in projects:
        projects["returned"] = _project(ls, store, spec, rs, "returned", inst)
        titles[int(projects["returned"]["id"])] = str(projects["returned"]["title"])
    known = set(zip(book["task_key"].astype(str), book["revision"].astype(str), strict=True))
    recorded = tool.recorded_keys(res.verdicts)  # an annotation is read when its id and creation time match
    ids = set(units.groups(res.items, rs.unit)) if rs.unit else set(res.items["item_id"].astype(str))
    plans: list[Plan] = [
        plan(
            spec.name,
            k,
            projects[k],
            wanted[k],
            live[k],
            recorded,
            ids - set(wanted[k]) if k != "returned" else frozenset(),
            known,
            titles,
            consolidate=True,
        )
        for k in loop.KINDS
        if k in projects
    ]
    progress = Progress(sum(p.creations() for p in plans))
    frames, counts = [], {}
    try:
        for p in plans:
            rows, counts[p.kind] = execute(ls, p, progress)
            frames.append(rows)
        if wanted["returned"]:
            out.metadata["returned_to"] = loop.reviewer_tabs(ls, int(projects["returned"]["id"]), wanted["returned"])
    except ReviewServerDown as exc:  # the tasks made so far are recorded now: the next push continues
        ledger.write(store, loop.LEDGER, spec.name, ledger.append(book, progress.events))
        raise exc if isinstance(exc, PushInterrupted) else PushInterrupted(progress, exc) from exc
    out.tables["review_tasks"] = {spec.name: pd.concat([prev[prev["kind"] == "human"], *frames], ignore_index=True)}
    out.tables[loop.LEDGER] = {spec.name: ledger.append(book, progress.events)}
    out.metadata.update(
        {
            "projects": {k: str(p["title"]) for k, p in projects.items()},
            "pushed": counts,
            "tasks_created": f"{progress.done} of {progress.total}",
            **gate.coverage(res),
        }
    )
    return out


def _project(
    ls: LabelStudio, store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, kind: str, instance: str
) -> dict[str, Any]:
    """The benchmark's one project of ``kind`` (created, or brought up to date; for ``review``, an
    earlier release's newest per-version project is adopted), with its media storage and its
    identity stamp (of ``instance``)."""
    name = loop.title(spec, kind)
    if kind == "review":
        loop.adopt_legacy(ls, name)
    overlap = rs.reviewers if kind == "review" else 1
    config = review_config(rs, adjudication=kind == "adjudication")
    p = project.ensure(ls, name, config, project.settings(overlap, loop.description(spec, rs, kind)), instance)
    ls.ensure_overlap(int(p["id"]), overlap)  # tasks an older release made keep overlap 1
    project.serve(ls, int(p["id"]), store.data_dir, store.data_dir.resolve() / "media")
    return p


def _loop_wanted(
    name: str, res: gate.Resolution, rs: ReviewSpec, clips: dict[str, str]
) -> dict[str, dict[str, Wanted]]:
    """kind → key → task: pending items to review, disputed ones to adjudication (with the
    verdicts so far), refused verdicts back to their reviewers."""
    items = res.items
    current = res.verdicts[~res.verdicts["stale"].astype(bool)]
    prior = {str(i): {"prior_text": prior_text(g)} for i, g in current.groupby("item_id")}
    if rs.unit:  # one task per unit, every member shown (forge/review/units.py)
        prior_text_of = {k: v["prior_text"] for k, v in prior.items()}
        return {
            "review": units.wanted(items, rs, clips, "review"),
            "adjudication": units.wanted(items, rs, clips, "adjudication", prior_text_of),
            "returned": loop.returned(name, res.verdicts, items, rs, clips),
        }
    return {
        "review": _wanted(items[items["review_status"] == "pending"], rs, clips, "review"),
        "adjudication": _wanted(items[items["review_status"] == "disputed"], rs, clips, "adjudication", prior),
        "returned": loop.returned(name, res.verdicts, items, rs, clips),
    }


def run_verdicts(
    store: TableStore,
    spec: BenchmarkSpec,
    rs: ReviewSpec,
    ls: LabelStudio | None,
    note: str = "",
    probe: Reprobe | None = None,
    nli: NLIBackend | None = None,
) -> StageResult:
    """Read every annotation back, merge with the recorded verdicts, apply edits, reject what
    reviewers rejected (stage ``human_review``). ``ls`` None (the tool is down, policy
    advisory): the recorded verdicts are re-resolved, nothing read, with ``note``. ``probe``:
    edited multiple-choice revisions re-enter the text-only probe (``forge/review/reprobe.py``).
    ``nli``: the stage's NLI backend for the member checks (MAIA: an edited foil must contradict
    its statement); its results stay on the verdict rows (``edit_nli``) for the export gate."""
    tasks = loop.load_ledger(store, spec.name)  # every task ever pushed, in whichever project it lives
    prev = read(store, "verdicts", spec.name)
    out = StageResult()
    polled: list[dict[str, Any]] = []
    if ls is None:
        merged = prev.reindex(columns=VERDICT_COLUMNS) if len(prev) else pd.DataFrame(columns=VERDICT_COLUMNS)
    else:
        if len(tasks):
            ls.ensure_up()
        by_kind, live = tool.poll(ls, tasks, loop.KINDS)
        users = ls.users() if len(tasks) else {}
        polled = [
            r
            for kind, projects in by_kind.items()
            for pid, ts in projects
            # a returned task is reviewed again: its verdict counts as a review verdict
            for r in verdict_rows(
                spec.name,
                "adjudication" if kind == "adjudication" else "review",
                pid,
                ts,
                users,
                rs.reasons,
                rs.limits,
                rs.member_answers,
            )
        ]
        # tasks of a replaced database are not deleted in the tool: their verdicts keep counting
        expected = ledger.pushed_ids(tasks, ident.instances(ls.projects()) if len(tasks) else None)
        merged = merge(prev, polled, live, expected)
    items = gated_items(store, spec.name)
    res = gate.resolve(items, merged, rs, store.data_dir, nli, spec.hooks)
    if probe is not None:
        probed, out.engine = reprobe(res.items, res.verdicts, probe, spec.asset("review_results"), spec.name)
        res = gate.resolve(items, probed, rs, store.data_dir, nli, spec.hooks) if out.engine is not None else res
    out.tables["verdicts"] = {spec.name: res.verdicts}
    out.tables["review_status"] = {spec.name: review_status(spec.name, res, rs.policy, rs.unit or spec.split.unit_key)}
    log = RejectLog(gate.STAGE, spec.name)
    for item_id, why in sorted(res.reasons.items()):
        drop = res.source_drops.get(item_id)
        by = drop.rejected_item if drop else item_id  # an item that left with its source: who rejected that
        who = sorted(
            res.verdicts.loc[
                (res.verdicts["item_id"] == by) & (res.verdicts["verdict"] == "reject") & res.verdicts["flag"].isna(),
                "reviewer",
            ]
            .astype(str)
            .unique()
        )
        source = f"{drop.source} dropped with {drop.rejected_item}, " if drop and drop.rejected_item != item_id else ""
        log.add(item_id, REJECT_REASON, detail=f"{why}: {source}rejected by {', '.join(who) or 'a reviewer'}")
    out.rejects = [log]
    out.metadata = gate.summary(res, rs, rs.policy)
    out.metadata["polled_verdicts"] = len(polled)
    if note:
        out.metadata["note"] = note
    return out


def export_gate(
    store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, gated: pd.DataFrame
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """What the export publishes under the review policy in effect (``rs``), and the card's review
    figures. Items carry their current revision (edits applied, ``extra.edited_by``)."""
    if gated.empty:
        return gated, {"policy": str(rs.policy)}
    res = resolution(store, spec, rs, gated)
    kept, left_out = gate.export_filter(res, rs.policy, rs.unit or spec.split.unit_key)  # a unit goes out whole
    info = gate.summary(res, rs, rs.policy)
    info.update({"held_back": len(left_out["held_back"]), "rejected_ids": left_out["rejected"][:50]})
    shown = res.items.loc[res.items["item_id"].isin(kept["item_id"]), "review_status"]
    needing = int((shown != "not_required").sum())
    info["exported_needing_review"] = needing
    info["exported_accepted"] = int((shown == "accepted").sum())
    info["not_reviewed_split"] = int((res.items["review_status"] == "not_required").sum())
    # every exported item that needed review was accepted by people (under `required`, whatever
    # is still pending is held back, so a partial review can be a fully human-reviewed export)
    info["human_reviewed"] = rs.policy != ReviewPolicy.OFF and needing > 0 and info["exported_accepted"] == needing
    info["summary"] = review_summary(info)
    return kept[gated.columns.tolist()], info


def review_summary(info: dict[str, Any]) -> str:
    """What was reviewed, in one line: "18 of 20 items human-accepted; 2 held back"."""
    parts = [f"{info.get('accepted', 0)} of {info.get('items_needing_review', 0)} items human-accepted"]
    if info.get("held_back"):
        parts.append(f"{info['held_back']} held back")
    if info.get("rejected"):
        parts.append(f"{info['rejected']} rejected")
    unreviewed = info.get("exported_needing_review", 0) - info.get("exported_accepted", 0)
    if unreviewed > 0:
        parts.append(f"{unreviewed} exported without a human decision")
    if info.get("not_reviewed_split"):
        parts.append(f"{info['not_reviewed_split']} in splits the policy does not review")
    return "; ".join(parts)


def coverage_note(md: dict[str, Any]) -> dict[str, Any]:
    """The ``review_coverage`` check's figures, with the held-back count and a sentence."""
    out = {k: md.get(k) for k in ("coverage", "accepted", "rejected", "disputed", "pending", "policy")}
    out.update({k: md[k] for k in ("verdicts_flagged", "flagged", "verdicts_refused", "refused") if k in md})
    open_ = int(md.get("pending", 0)) + int(md.get("disputed", 0))
    need = md.get("items_needing_review", 0)
    out["held_back"] = open_ if md.get("policy") == ReviewPolicy.REQUIRED else 0
    if not open_:
        out["note"] = f"{md.get('reviewed', 0)} of {need} items decided by reviewers"
    elif out["held_back"]:
        out["note"] = (
            f"{open_} of {need} items held back from the export until reviewed (policy required: "
            f"{md.get('pending', 0)} pending, {md.get('disputed', 0)} disputed)"
        )
    else:
        out["note"] = f"{open_} of {need} items not decided yet; policy {md.get('policy')} exports them unreviewed"
    return out
