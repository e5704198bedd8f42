"""Review decides what is published: revisions from edits, each item's status, the export's
filter and the card's figures. Dagster-free.

Rules (docs/review.md):

* edits apply in the order they were made, each to the revision its reviewer saw; an edit that
  breaks the item's contract (``forge.review.items.apply_edits``) is refused with its reason and
  the original stays. An applied edit makes a new revision (``extra.edited_by``) that re-enters
  the gates' field checks and needs review again; the editor's verdict counts as an accept of it;
* a verdict counts for the revision it was made on; verdicts on older revisions are stale
  (``item_changed``), those whose task was deleted in the tool too (``task_deleted``);
* a refused verdict (an annotation that could not be read exactly, ``verdicts.refusal``) and a
  flagged one (last changed by someone other than its author, ``verdicts.flag``) never count;
* per item, each reviewer's latest verdict counts once. An adjudication verdict is final;
  otherwise accepts and rejects together are ``disputed`` (sent to adjudication), ``reviewers``
  accepts are ``accepted``, a reject with no accept once ``reviewers`` verdicts are in (or a
  reject when one reviewer is required) is ``rejected``, anything else is ``pending``;
* policy ``required``: the export holds back pending and disputed items; ``advisory``: it holds
  back nothing; in both, rejected items are dropped (rejects with stage ``human_review``);
* a unit (``ReviewSpec.unit``, ``forge/review/units.py``) goes out whole or not at all; an edited
  member must keep its unit whole (``units.unit_problem``); a unit with an ``adjudicate_flags`` flag
  is ``disputed`` until adjudicated, and an adjudicator who reviewed the unit does not count;
* a reject whose reason drops the source (``ReviewSpec.consequences``) rejects every item of its
  clip or image with that reason (``forge/review/consequences.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.hooks import PaperHooks
from forge.benchmarks.review_spec import EditChecks, ReviewPolicy, ReviewSpec
from forge.checks.nli import NLIBackend
from forge.items.cells import as_object
from forge.people import agreement
from forge.review import units
from forge.review.consequences import SourceDrop, apply_recipe_drops, apply_source_drops
from forge.review.items import apply_edits, revision
from forge.review.verdicts import VERDICT_COLUMNS, edit_of

STAGE = "human_review"
DECIDED = ("accepted", "rejected")


@dataclass
class Resolution:
    items: pd.DataFrame  # current revision of every item (edits applied), with review status
    verdicts: pd.DataFrame  # verdict rows with edit outcome and staleness filled in
    status: dict[str, str]  # item_id → accepted / rejected / disputed / pending / not_required
    reasons: dict[str, str] = field(default_factory=dict)  # rejected item → the reviewers' reason
    # items rejected with their source (a ``drop_source`` reason, forge/review/consequences.py)
    source_drops: dict[str, SourceDrop] = field(default_factory=dict)


def needs_review(items: pd.DataFrame, spec: ReviewSpec) -> pd.Series:
    if not spec.splits or "split" not in items:
        return pd.Series(True, index=items.index)
    return items["split"].isin(list(spec.splits))


def with_probe(new: dict, edit_blind: Any) -> tuple[dict | None, str]:
    """The edited item with the text-only probe's figures on its revision (``forge/review/reprobe.py``),
    or (None, why) when the probe flagged it under the opt-in ``blind.action: drop``."""
    fig = as_object(edit_blind)
    if not fig or fig.get("revision") != revision(new):
        return new, ""  # not probed yet (or on another revision): the figures of the original stay
    if fig.get("drop"):
        return None, (
            f"blind_flagged: answered without the media {fig['correct']}/{fig['trials']} "
            f"(p={fig['p_value']:.3g}; blind.action: drop)"
        )
    return {**new, **{f"blind_{k}": fig[k] for k in ("trials", "correct", "chance", "p_value", "flagged")}}, ""


def apply_revisions(
    items: pd.DataFrame,
    verdicts: pd.DataFrame,
    data_dir: Path | None,
    spec: ReviewSpec | None = None,
    nli: NLIBackend | None = None,
    hooks: PaperHooks | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Items with their applied edits; verdict rows with edit_status / edit_note / new_revision.
    With ``spec.unit``, an edited member must also keep its unit whole (``units.unit_problem``:
    as many answers, none repeated, the stage's own checks of the member, run with ``nli`` or
    decided by what an earlier read recorded in ``edit_nli``). ``hooks``: the paper's behaviour
    (``follow_edit``, ``member_check``; None: the shared)."""
    hooks = hooks if hooks is not None else PaperHooks()
    unit_of_item = units.unit_ids(items, spec.unit if spec else None)
    v = verdicts.reindex(columns=VERDICT_COLUMNS).copy()
    made = v["new_revision"].copy()  # what each edit made when last resolved (the recipe may adopt it)
    v["edit_status"] = None
    v["edit_note"] = None
    v["new_revision"] = None
    v["edit_nli"] = v["edit_nli"].astype(object)  # JSON text (an empty read gives floats)
    by_id = {str(r["item_id"]): r for r in items.to_dict("records")}
    live = ~(v["stale_reason"] == "task_deleted") & v["flag"].isna()  # a flagged edit is not its author's
    edits = v[(v["verdict"] == "edit") & live].sort_values(["created_at", "verdict_id"], kind="stable")
    for idx, row in edits.iterrows():
        item = by_id.get(str(row["item_id"]))
        if item is None:
            continue
        if row["revision"] != revision(item):
            if made[idx] == revision(item):  # the recipe rebuilt the item as the edit made it (Hummus' verdict)
                v.loc[idx, ["edit_status", "new_revision"]] = ["applied", made[idx]]
                extra = as_object(item.get("extra"))
                extra["edited_by"] = sorted({*extra.get("edited_by", []), str(row["reviewer"])})
                by_id[str(row["item_id"])] = {**item, "extra": json.dumps(extra, ensure_ascii=False)}
            else:
                v.loc[idx, ["edit_status", "edit_note"]] = ["stale", "made on an older revision"]
            continue
        new, why = apply_edits(item, edit_of(row.to_dict()), data_dir)
        if new is not None and spec is not None:
            new = hooks.follow_edit(item, new)  # the fields the recipe derives from the edited one
        if new is not None and spec is not None and (spec.unit or hooks.overrides("member_check")):
            u = unit_of_item.get(str(row["item_id"]))
            others = [
                it for i, it in by_id.items() if u is not None and i != str(row["item_id"]) and unit_of_item.get(i) == u
            ]
            checks = EditChecks(nli=nli, recorded=as_object(row.get("edit_nli")))
            why = units.unit_problem(new, item, others, hooks, checks) or ""
            new = None if why else new
            v.loc[idx, ["edit_nli", "edit_note"]] = [
                json.dumps(checks.record, ensure_ascii=False) if checks.record else None,
                "; ".join(checks.notes) or None,  # what a check measured or could not run
            ]
        if new is not None:
            new, why = with_probe(new, row.get("edit_blind"))
        if new is None:
            v.loc[idx, ["edit_status", "edit_note"]] = ["refused", why]
            continue
        extra = as_object(item.get("extra"))
        extra.setdefault("revision_of", revision(item))
        extra["edited_by"] = sorted({*extra.get("edited_by", []), str(row["reviewer"])})
        new["extra"] = json.dumps(extra, ensure_ascii=False)
        by_id[str(row["item_id"])] = new
        v.loc[idx, ["edit_status", "new_revision"]] = ["applied", revision(new)]
    out = pd.DataFrame(list(by_id.values()), columns=items.columns) if by_id else items.iloc[0:0].copy()
    return out, v


def votes(g: pd.DataFrame, rev: str) -> pd.DataFrame:
    """Each reviewer's latest verdict that counts for revision ``rev`` (accept / reject). Refused
    verdicts (``verdict = refused``, an edit refused) and flagged ones (changed by another) never count."""
    g = g[g["flag"].isna()]
    acc = g[
        ((g["verdict"] == "accept") & (g["revision"] == rev))
        | ((g["edit_status"] == "applied") & (g["new_revision"] == rev))
    ]
    rej = g[(g["verdict"] == "reject") & (g["revision"] == rev)]
    both = pd.concat([acc.assign(vote="accept"), rej.assign(vote="reject")])
    return both.sort_values(["updated_at", "verdict_id"], kind="stable").drop_duplicates("reviewer", keep="last")


def item_status(g: pd.DataFrame, rev: str, required: int) -> tuple[str, str | None]:
    if not len(g):  # no verdict at all (most items of a build before review): what the rules below give
        return ("accepted", None) if required <= 0 else ("pending", None)
    live = g[g["stale_reason"] != "task_deleted"]
    adj = votes(live[live["project_kind"] == "adjudication"], rev)
    if len(adj):
        last = adj.iloc[-1]
        why = last["reason"] if isinstance(last["reason"], str) and last["reason"] else "other"
        return ("accepted", None) if last["vote"] == "accept" else ("rejected", why)
    cast = votes(live[live["project_kind"] == "review"], rev)
    n_acc, n_rej = int((cast["vote"] == "accept").sum()), int((cast["vote"] == "reject").sum())
    if n_acc and n_rej:
        return "disputed", None
    if n_rej and (required == 1 or n_rej >= required):
        reason = cast.loc[cast["vote"] == "reject", "reason"].fillna("other").mode()
        return "rejected", str(reason.iloc[0]) if len(reason) else "other"
    if n_acc >= required:
        return "accepted", None
    return "pending", None


def mark_adjudicators(items: pd.DataFrame, v: pd.DataFrame, key: str | None) -> pd.DataFrame:
    """An adjudication verdict by someone who gave a review verdict on the same unit does not count
    (``flag``): the paper's additional annotator is another person (MAIA §3 fn. 7)."""
    if not len(v):
        return v
    v = v.copy()
    unit_of_item = units.unit_ids(items, key)
    unit = v["item_id"].astype(str).map(lambda i: unit_of_item.get(i, f"item={i}"))
    who = v["reviewer"].astype(str)
    review = v["project_kind"] == "review"
    reviewed = set(zip(unit[review], who[review], strict=True))
    bad = (v["project_kind"] == "adjudication") & v["flag"].isna()
    bad &= pd.Series([(u, r) in reviewed for u, r in zip(unit, who, strict=True)], index=v.index)
    if bad.any():
        v["flag"] = v["flag"].astype(object)
        v.loc[bad, "flag"] = (
            "adjudicator_reviewed: " + who[bad] + " reviewed this unit; another annotator adjudicates it"
        )
    return v


def record_flags(current: pd.DataFrame, v: pd.DataFrame, status: dict[str, str]) -> pd.DataFrame:
    """Each decided item with flags (``extra.review``) records what its review did to them
    (``extra.flags_reviewed``: cleared by an accept, fixed by an edit, confirmed by a reject; who,
    which verdict). ``extra`` is outside the revision: recording changes no revision."""
    counted = v[~v["stale"].astype(bool) & v["flag"].isna() & v["verdict"].isin(["accept", "reject", "edit"])]
    last = {str(r.item_id): r for r in counted.sort_values(["updated_at", "verdict_id"], kind="stable").itertuples()}
    rows = []
    for it in current.to_dict("records"):
        # a member's own flags where the recipe names them (MAIA: ``answer 3``), else the item's
        notes = list(units.member_flags(it).items()) or [("item", n) for n in units.flags(it)]
        r = last.get(str(it["item_id"]))
        if notes and r is not None and status.get(str(it["item_id"])) in DECIDED:
            extra = as_object(it.get("extra"))
            named = str(r.member) if isinstance(r.member, str) else ""
            extra["flags_reviewed"] = [
                {
                    "member": label,
                    "flag": n,
                    # an edit fixes the flag of the member it names, or of every member of the item's block
                    "outcome": units.flag_outcome(
                        str(r.verdict), label in named.split(", ") or "member " in named or label == "item"
                    ),
                    "by": str(r.reviewer),
                    "verdict_id": str(r.verdict_id),
                }
                for label, n in notes
            ]
            it = {**it, "extra": json.dumps(extra, ensure_ascii=False)}
        rows.append(it)
    return pd.DataFrame(rows, columns=current.columns) if rows else current


def _adjudicated(g: pd.DataFrame) -> bool:
    """A counting adjudication verdict on any revision of the item (the adjudicator's edit makes a
    new revision: the adjudicated answers then stand without a second adjudication)."""
    if not len(g):
        return False
    adj = g[(g["project_kind"] == "adjudication") & g["flag"].isna() & (g["stale_reason"] != "task_deleted")]
    return bool((adj["verdict"].isin(["accept", "reject"]) | (adj["edit_status"] == "applied")).any())


def resolve(
    items: pd.DataFrame,
    verdicts: pd.DataFrame,
    spec: ReviewSpec,
    data_dir: Path | None,
    nli: NLIBackend | None = None,
    hooks: PaperHooks | None = None,
) -> Resolution:
    verdicts = mark_adjudicators(items, verdicts.reindex(columns=VERDICT_COLUMNS), spec.unit)
    hooks = hooks if hooks is not None else PaperHooks()  # the paper's behaviour (None: the shared)
    current, v = apply_revisions(items, verdicts, data_dir, spec, nli, hooks)
    revs = {str(r["item_id"]): revision(r) for r in current.to_dict("records")}
    changed = (v["revision"] != v["item_id"].map(revs)) & (v["edit_status"] != "applied")
    keep_deleted = v["stale_reason"] == "task_deleted"
    v["stale"] = keep_deleted | changed
    v["stale_reason"] = v["stale_reason"].where(keep_deleted, None)
    v.loc[changed & ~keep_deleted, "stale_reason"] = "item_changed"
    gated = needs_review(current, spec)
    status, reasons = {}, {}
    groups = {str(k): g for k, g in v.groupby("item_id")} if len(v) else {}
    empty = v.iloc[0:0]
    # a unit whose flags the paper settled by adjudication (MAIA: contradicting pools) goes there first
    to_adjudicate = {
        i
        for members in units.groups(current, spec.unit).values()
        if units.needs_adjudication(members, spec.adjudicate_flags)
        for i in (str(m["item_id"]) for m in members)
    }
    for item_id, need in zip(current["item_id"].astype(str), gated, strict=True):
        if not need:
            status[item_id] = "not_required"
            continue
        s, why = item_status(groups.get(item_id, empty), revs[item_id], spec.reviewers)
        if item_id in to_adjudicate and s != "rejected" and not _adjudicated(groups.get(item_id, empty)):
            s, why = "disputed", None
        status[item_id] = s
        if why:
            reasons[item_id] = why
    drops = apply_source_drops(current, status, reasons, spec)  # a dropped clip or image takes all its items
    drops.update(apply_recipe_drops(current, status, reasons, hooks))  # what the recipe would not build now
    current = record_flags(current, v, status)
    current = current.assign(review_status=current["item_id"].astype(str).map(status))
    return Resolution(current, v, status, reasons, drops)


def export_filter(
    res: Resolution, policy: ReviewPolicy, unit_key: str | None = None
) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """(items to export, item ids left out by why: ``rejected`` / ``held_back``). With the
    benchmark's ``unit_key`` (``SplitPolicy.unit_key``: items the paper treats as one whole, e.g. a
    MAIA pool's 8 statement pairs and its open question), a unit goes out whole or not at all: the
    other members of a unit with a rejected or held-back member are held back with it."""
    items = res.items
    rejected = items["review_status"] == "rejected"
    held = items["review_status"].isin(["pending", "disputed"]) if policy == ReviewPolicy.REQUIRED else False
    if policy == ReviewPolicy.OFF:
        rejected = pd.Series(False, index=items.index)
    held = pd.Series(held, index=items.index, dtype=bool)
    members = units.unit_ids(items, unit_key)  # item_id → its unit (a column, labels.<f>, extra.<f>)
    if members:
        unit = items["item_id"].astype(str).map(lambda i: members.get(i, f"item={i}"))
        # an item dropped by a rule because another item decided it (the recipe would no longer build
        # it, e.g. Hummus' details of a pair edited to No; or its source left) is no longer a member
        followed = (
            items["item_id"].astype(str).map(lambda i: i in res.source_drops and res.source_drops[i].rejected_item != i)
        )
        held |= unit.isin(set(unit[(rejected & ~followed) | held])) & ~rejected
    keep = ~(rejected | held)
    out = {
        "rejected": sorted(items.loc[rejected, "item_id"].astype(str)),
        "held_back": sorted(items.loc[~keep & ~rejected, "item_id"].astype(str)),
    }
    return items[keep].drop(columns=["review_status"]).reset_index(drop=True), out


def coverage(res: Resolution) -> dict[str, int]:
    s = pd.Series(res.status, dtype=object)
    need = s[s != "not_required"]
    return {
        "items_needing_review": int(len(need)),
        "reviewed": int(need.isin(DECIDED).sum()),
        "accepted": int((need == "accepted").sum()),
        "rejected": int((need == "rejected").sum()),
        "disputed": int((need == "disputed").sum()),
        "pending": int((need == "pending").sum()),
    }


def reviewer_minutes(res: Resolution) -> dict[str, Any]:
    """The one definition of people's cost (card, metadata, ``review_status``, docs/review.md's
    query): every minute reviewers spent on the benchmark (Label Studio's lead time of every
    verdict recorded, stale, refused and flagged ones included: the time was spent) over the items
    accepted now (status ``accepted`` at their current revision)."""
    v = res.verdicts
    minutes = float(pd.to_numeric(v["seconds"], errors="coerce").fillna(0).sum()) / 60 if len(v) else 0.0
    accepted = coverage(res)["accepted"]
    return {
        "reviewer_minutes": round(minutes, 2),
        "reviewer_minutes_per_accepted_item": round(minutes / accepted, 3) if accepted else None,
    }


def not_counted(v: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(refused verdicts, flagged verdicts) that are not stale: what reviewers must answer again."""
    live = v[~v["stale"].astype(bool)] if len(v) else v
    refused = live[(live["verdict"] == "refused") | (live["edit_status"] == "refused")]
    return refused, live[live["flag"].notna()]


def summary(res: Resolution, spec: ReviewSpec, policy: ReviewPolicy) -> dict[str, Any]:
    """What the card and the asset metadata say about review."""
    cov = coverage(res)
    v = res.verdicts
    counted = v["verdict"].isin(["accept", "reject", "edit"]) & v["flag"].isna() & (v["edit_status"] != "refused")
    live = v[(v["stale_reason"] != "task_deleted") & counted]
    cats = dict(zip(res.items["item_id"].astype(str), res.items["category"].astype(str), strict=True))
    review = live[live["project_kind"] == "review"]
    refused, flagged = not_counted(v)
    return {
        "policy": str(policy),
        "reviewers_per_item": spec.reviewers,
        "splits_reviewed": list(spec.splits) or "all",
        **cov,
        "coverage": f"{cov['reviewed']}/{cov['items_needing_review']}",
        "edited_items": int(res.items["extra"].map(lambda e: bool(as_object(e).get("edited_by"))).sum()),
        "edits_refused": int((v["edit_status"] == "refused").sum()),
        "verdicts": int(len(live)),
        "verdicts_refused": int(len(refused)),
        "verdicts_flagged": int(len(flagged)),
        # who must answer again and why (the first 20 of each), for the coverage check and the UI
        "refused": [f"{r.item_id} by {r.reviewer}: {why(r)}" for r in refused.head(20).itertuples()],
        "flagged": [f"{r.item_id}: {r.flag}" for r in flagged.head(20).itertuples()],
        "reviewers": sorted(live["reviewer"].astype(str).unique().tolist()),
        **verdict_agreement(review, cats),
        **reviewer_minutes(res),
        "procedure": spec.note,
    }


KEEPS = {"accept": 1, "edit": 1, "reject": 0}  # agreement's value: an edit keeps the item, as an accept does


def verdict_agreement(review: pd.DataFrame, cats: dict[str, str]) -> dict[str, Any]:
    """{agreement, agreement_by_category}: the reviewers' Krippendorff's alpha (forge.people.agreement),
    overall and per item category; a unit is one item revision, a value keep (1) or reject (0)."""
    v = review[review["verdict"].isin(list(KEEPS))]
    v = v.assign(
        unit=v["item_id"].astype(str) + "@" + v["revision"].astype(str),
        value=v["verdict"].map(KEEPS),
        category=v["item_id"].map(cats).fillna("unknown"),
    )
    rows = agreement.long_rows(v, "unit", "reviewer", "value")

    def said(a: agreement.Alpha) -> dict[str, Any]:
        return {"alpha": a.alpha, "units": a.units, "reviewers": a.people} | ({"note": a.note} if a.note else {})

    by = agreement.alpha_by(rows, "category")
    return {"agreement": said(agreement.alpha(rows)), "agreement_by_category": {c: said(a) for c, a in by.items()}}


def why(r: Any) -> str:
    """A refused verdict's reason for people (an unreadable annotation, or an edit refused)."""
    return str(r.refusal) if isinstance(r.refusal, str) else f"edit refused ({r.edit_note})"
