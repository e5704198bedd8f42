"""The dataset card's human-review lines (``forge/splits/card.py`` calls ``card_lines``),
from the figures ``forge.review.stages.export_gate`` gathered. Dagster-free; imports nothing
from ``forge.splits`` (the card module imports this one).
"""

from __future__ import annotations

from typing import Any


def card_lines(info: dict[str, Any], cost: dict[str, Any] | None = None) -> tuple[list[str], list[str]]:
    """(the card's first-lines notice, its ``Human review`` section)."""
    if not info:
        return [], []
    cov = info.get("coverage", "0/0")
    said = info.get("summary")  # "18 of 20 items human-accepted; 2 held back" (stages.review_summary)
    if info.get("human_reviewed"):  # every exported item that needed review was accepted by people
        top = [
            f"> Human-reviewed: {said or f'{cov} items decided'} (by {len(info.get('reviewers') or [])} "
            f"reviewer(s), policy `{info['policy']}`).",
            "",
        ]
    else:
        top = [
            f"> **Not human-reviewed.** Review policy `{info.get('policy')}`: "
            + (said or f"{cov} items reviewed" + (f", {info['held_back']} held back" if info.get("held_back") else ""))
            + ". Start review with `make review` (docs/review.md).",
            "",
        ]
    ag = info.get("agreement") or {}
    lines = [
        "## Human review",
        "",
        "| figure | value |",
        "|---|---|",
        f"| policy | {info.get('policy')} |",
        f"| reviewers per item | {info.get('reviewers_per_item')} |",
        f"| coverage (decided / needing review) | {cov} |",
        f"| accepted / rejected / disputed / pending | {info.get('accepted', 0)} / {info.get('rejected', 0)} / {info.get('disputed', 0)} / {info.get('pending', 0)} |",
        f"| held back from this export | {info.get('held_back', 0)} |",
        # verdicts read but not counted: unreadable ones refused, others changed by someone else
        f"| verdicts not counted (refused / changed by another) | {info.get('verdicts_refused', 0)} / {info.get('verdicts_flagged', 0)} |",
        f"| items edited by reviewers (new revisions) | {info.get('edited_items', 0)} |",
        f"| Krippendorff's alpha (nominal, accept vs reject) | {ag.get('alpha') if ag.get('alpha') is not None else 'n/a (' + str(ag.get('note', '')) + ')'} over {ag.get('units', 0)} items |",
        f"| reviewer minutes per accepted item | {info.get('reviewer_minutes_per_accepted_item') if info.get('reviewer_minutes_per_accepted_item') is not None else 'n/a'} ({info.get('reviewer_minutes', 0)} min in all) |",
        f"| LLM dollars per accepted item (Cost section) | {_usd((cost or {}).get('per_item'))} |",
        "",
    ]
    cats = {c: a for c, a in (info.get("agreement_by_category") or {}).items() if a.get("units")}
    if cats:
        lines += [
            "Agreement per category: "
            + ", ".join(f"{c} α={a.get('alpha')} (n={a.get('units')})" for c, a in cats.items()),
            "",
        ]
    if info.get("procedure"):
        lines += [f"Paper's procedure: {info['procedure']}", ""]
    return top, lines


def _usd(v: Any) -> str:
    return f"${float(v):.5f}" if isinstance(v, (int, float)) else "n/a"
