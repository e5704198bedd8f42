"""The dataset card's human-review lines (``forge/export/card.py`` calls ``card_lines``),
from the figures ``forge.review.stages.export_gate`` gathered. Dagster-free; imports nothing
from ``forge.splits`` (the card module imports this one).
"""

from __future__ import annotations

from typing import Any

from forge.protocol import card as protocol_card


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
    figs = info.get("human_figures") or {}
    rest = {k: v for k, v in figs.items() if k != "protocol"}
    return top, lines + human_figure_lines(rest) + protocol_card.lines(figs.get("protocol"))


def _usd(v: Any) -> str:
    return f"${float(v):.5f}" if isinstance(v, (int, float)) else "n/a"


HUMAN_MODELS = ("human (avg)", "human (best)")  # forge/evals/per_person.py writes them


def human_figures(store: Any, benchmark: str) -> dict[str, Any]:
    """The latest human-baseline rows (``eval_scores``, primary, slice ``all``) and judge-validation
    figures (``judge_agreement``) of ``benchmark``, for the card. Tables, not imports: the evals
    that write them sit above this layer. Empty when neither has been measured."""
    out: dict[str, Any] = {}
    if store.exists("eval_scores"):
        s = store.read("eval_scores", where="benchmark = ? and model in (?, ?)", params=[benchmark, *HUMAN_MODELS])
        s = s[s["primary"].astype(bool) & (s["slice"] == "all")] if len(s) else s
        out["baselines"] = s.to_dict("records")
    if store.exists("human_scores"):
        p = store.read("human_scores", where="benchmark = ? and counted", params=[benchmark], columns=["person"])
        out["people"] = int(p["person"].nunique()) if len(p) else 0
    if store.exists("judge_agreement"):
        out["judge"] = store.read("judge_agreement", where="benchmark = ?", params=[benchmark]).to_dict("records")
    out["protocol"] = protocol_card.figures(store, benchmark)  # the paper's human steps (forge/protocol)
    return {k: v for k, v in out.items() if v}


def _value(r: dict[str, Any]) -> str:
    v, lo, hi = r.get("value"), r.get("ci_low"), r.get("ci_high")
    if v is None or v != v:
        return "n/a"
    ci = f" [{lo:.3g}, {hi:.3g}]" if lo is not None and lo == lo and hi is not None and hi == hi else ""
    return f"{v:.3g}{ci}"


def _kappa(v: Any) -> str:
    return "n/a" if v is None or v != v else f"{float(v):.3f}"


def human_figure_lines(figs: dict[str, Any]) -> list[str]:
    """The card's ``Human baselines and judge validation`` section (people are counted, never named)."""
    if not figs:
        return []
    lines = ["## Human baselines and judge validation", "", "| figure | value |", "|---|---|"]
    for r in sorted(figs.get("baselines") or [], key=lambda r: (str(r["setting"]), str(r["model"]))):
        lines.append(
            f"| {r['model']}, setting `{r['setting']}`, {r['metric']} | {_value(r)} over {r['n']} items "
            f"({figs.get('people', '?')} people; export {r.get('export_version')}) |"
        )
    judge = figs.get("judge") or []
    by = {r["measure"]: r for r in judge if r.get("person") is None or r.get("person") != r.get("person")}
    cohen = [r for r in judge if r["measure"] == "cohen_person_vs_judge"]
    if by:
        f = by.get("fleiss_people") or {}
        g = by.get("fleiss_people_and_judge") or {}
        lines += [
            f"| judge validation: Fleiss' kappa between {f.get('raters')} people | {_kappa(f.get('value'))} over "
            f"{f.get('units')} answers (labels {f.get('labels')}) |",
            f"| Fleiss' kappa of the people and the judge (`{f.get('judge_model')}`) | {_kappa(g.get('value'))} |",
        ]
    if cohen:
        each = ", ".join(f"rater {k} {_kappa(r['value'])} (n={r['units']})" for k, r in enumerate(cohen, start=1))
        lines.append(f"| Cohen's kappa, each person vs the judge | {each} |")
    return [*lines, ""]
