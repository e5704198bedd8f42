"""Ready answers about review, Dagster-free: the ``review_status`` table (one row per item and
revision: status, reviewers, reasons, minutes, what the export does with it) and the verdicts that
go back to their reviewers (refused or flagged, with the reason).

``<b>_review_results`` writes ``review_status`` from the same resolution that gates the export
(``forge/review/gate.py``), so a row's status is the one the export acts on.
"""

from __future__ import annotations

import pandas as pd

from forge.benchmarks.review_spec import ReviewPolicy
from forge.review import gate
from forge.review.items import revision

STATUS_COLUMNS = [
    "benchmark",
    "item_id",
    "revision",
    "current",
    "status",
    "export",
    "reviewers",
    "accepted_by",
    "rejected_by",
    "reasons",
    "verdicts",
    "minutes",
    "last_verdict_at",
]
RETURNED_COLUMNS = [
    "verdict_id",
    "benchmark",
    "item_id",
    "revision",
    "project_id",
    "task_id",
    "reviewer",
    "author",
    "why",
]


def _names(s: pd.Series) -> list[str]:
    return sorted(s.dropna().astype(str).unique().tolist())


def _reasons(g: pd.DataFrame, rev: str) -> str | None:
    """Why the row stands as it does, for people: rejects, refusals, flags, refused edits."""
    out = []
    for r in g.sort_values(["updated_at", "verdict_id"], kind="stable").itertuples():
        if isinstance(r.flag, str):
            out.append(f"{r.reviewer}: not counted ({r.flag})")
        elif r.verdict == "refused":
            out.append(f"{r.reviewer}: refused ({r.refusal})")
        elif r.edit_status == "refused":
            out.append(f"{r.reviewer}: edit refused ({r.edit_note})")
        elif r.verdict == "reject":
            note = f": {r.note}" if isinstance(r.note, str) and r.note else ""
            out.append(f"{r.reviewer}: reject ({r.reason}{note})")
        elif r.edit_status == "applied":
            out.append(f"{r.reviewer}: edited into revision {r.new_revision}")
    return "; ".join(out) or None


def _row(benchmark: str, item_id: str, rev: str, g: pd.DataFrame, current: bool) -> dict:
    counted = gate.votes(g[g["stale_reason"] != "task_deleted"], rev) if len(g) else g
    mine = g[g["revision"] == rev]  # time is counted on the revision the reviewer saw
    seconds = pd.to_numeric(mine["seconds"], errors="coerce").fillna(0).sum() if len(mine) else 0.0
    return {
        "benchmark": benchmark,
        "item_id": item_id,
        "revision": rev,
        "current": current,
        "reviewers": _names(mine["reviewer"]) if len(mine) else [],
        "accepted_by": _names(counted.loc[counted["vote"] == "accept", "reviewer"]) if len(counted) else [],
        "rejected_by": _names(counted.loc[counted["vote"] == "reject", "reviewer"]) if len(counted) else [],
        "reasons": _reasons(g[(g["revision"] == rev) | (g["new_revision"] == rev)], rev) if len(g) else None,
        "verdicts": int(len(mine)),
        "minutes": float(seconds) / 60,
        "last_verdict_at": mine["updated_at"].max() if len(mine) else None,
    }


def review_status(
    benchmark: str, res: gate.Resolution, policy: ReviewPolicy, unit_key: str | None = None
) -> pd.DataFrame:
    """One row per item and revision: the current revision of every gated item (status as the
    gate has it, ``refused`` where it waits on a verdict that was refused or flagged; ``export``:
    kept / held_back / dropped under ``policy``, a unit of ``unit_key`` whole), and every older revision verdicts were given on
    (``superseded``; ``not_gated`` when the item left the gated items)."""
    v = res.verdicts
    _, left_out = gate.export_filter(res, policy, unit_key)
    held, dropped = set(left_out["held_back"]), set(left_out["rejected"])
    refused, flagged = gate.not_counted(v)
    waiting = set(refused["item_id"].astype(str)) | set(flagged["item_id"].astype(str))
    groups = {str(k): g for k, g in v.groupby("item_id")} if len(v) else {}
    empty = v.iloc[0:0]
    rows, seen = [], set()
    for item in res.items.to_dict("records"):
        item_id, rev = str(item["item_id"]), revision(item)
        g = groups.get(item_id, empty)
        status = res.status[item_id]
        if status == "pending" and item_id in waiting:
            status = "refused"
        export = "held_back" if item_id in held else "dropped" if item_id in dropped else "kept"
        rows.append({**_row(benchmark, item_id, rev, g, True), "status": status, "export": export})
        seen.add((item_id, rev))
    gated = set(res.items["item_id"].astype(str))
    for (item_id, rev), _g in v.groupby([v["item_id"].astype(str), v["revision"].astype(str)]) if len(v) else []:
        if (item_id, rev) in seen:
            continue
        status = "superseded" if item_id in gated else "not_gated"
        rows.append({**_row(benchmark, item_id, rev, groups[item_id], False), "status": status, "export": None})
    out = pd.DataFrame(rows, columns=STATUS_COLUMNS)
    return out.sort_values(["item_id", "current", "revision"], kind="stable").reset_index(drop=True)


def returned(benchmark: str, verdicts: pd.DataFrame) -> pd.DataFrame:
    """The verdicts that go back to their reviewers: refused ones (the annotation could not be
    read exactly, or its edit broke the item's contract) and flagged ones (changed by someone
    other than their author), not stale, each with the reason for people (``why``)."""
    refused, flagged = gate.not_counted(verdicts)
    rows = [
        {**{c: getattr(r, c) for c in RETURNED_COLUMNS if c not in ("benchmark", "why")}, "why": gate.why(r)}
        for r in refused.itertuples()
    ]
    rows += [
        {**{c: getattr(r, c) for c in RETURNED_COLUMNS if c not in ("benchmark", "why")}, "why": str(r.flag)}
        for r in flagged[~flagged["verdict_id"].isin(refused["verdict_id"])].itertuples()
    ]
    return pd.DataFrame([{**r, "benchmark": benchmark} for r in rows], columns=RETURNED_COLUMNS)
