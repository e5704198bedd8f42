"""The dataset card's ``Protocol steps`` section: per human step of the paper, how many units
people decided and for how many the LLM's result was used (and why), and how often a person's
answer agreed with the LLM's draft, counted over ``hidden`` answers only (a person who saw the draft
pre-filled or before answering is anchored by it: their agreement measures that), from the step tables
(``protocol_results``, ``protocol_answers``). Dagster-free; tables, not imports, so the card
(forge/review/card.py) reads it without importing the recipe."""

from __future__ import annotations

from typing import Any

from forge.protocol.steps import ANSWERS, RESULTS
from forge.storage import TableStore


def figures(store: TableStore, benchmark: str) -> list[dict[str, Any]]:
    """One dict per step of ``benchmark`` that has been read back; [] before any read."""
    if not store.exists(RESULTS):
        return []
    res = store.read(RESULTS, where="benchmark = ?", params=[benchmark])
    ans = store.read(ANSWERS, where="benchmark = ?", params=[benchmark]) if store.exists(ANSWERS) else None
    out = []
    for step, g in res.groupby("step", sort=True):
        a = ans[ans["step"] == step] if ans is not None and len(ans) else None
        llm = g[g["decided_by"] == "llm"]
        agree = _hidden_agreement(a)
        out.append(
            {
                "step": str(step),
                "corrects": str(g["corrects"].iloc[0]),
                "units": len(g),
                "human": int((g["decided_by"] == "human").sum()),
                "llm": len(llm),
                "llm_why": {str(k): int(v) for k, v in llm["why_llm"].value_counts().items()},
                "changed": int(g["changed"].fillna(False).astype(bool).sum()),
                "kept": int(g["keep"].astype(bool).sum()),
                "refused": int(a["refused"].notna().sum()) if a is not None else 0,
                "people": int(a["person"].nunique()) if a is not None else 0,
                "excluded": int(a.loc[a["excluded"].notna(), "person"].nunique()) if a is not None else 0,
                "excluded_why": _excluded_why(a),
                "agree": agree,
                "modes": _modes(g, a),
            }
        )
    return out


def _excluded_why(a: Any) -> list[str]:
    """Each excluded person's reason (the control screening), in the order people first answered;
    people are numbered, never named (their e-mails stay in protocol_answers)."""
    if a is None or not len(a):
        return []
    ex = a[a["excluded"].notna()].drop_duplicates("person")
    return [str(r) for r in ex["excluded"]]


def _hidden_agreement(a: Any) -> tuple[int, int] | None:
    """(answers equal to the LLM's draft, answers) over the counted hidden answers: not refused,
    not excluded, not a control; None when there are none (or the LLM has no draft to agree with)."""
    if a is None or "draft_mode" not in a.columns:
        return None
    h = a[(a["draft_mode"] == "hidden") & a["refused"].isna() & a["excluded"].isna() & ~a["control"].astype(bool)]
    h = h[h["agrees_llm"].notna()]
    return (int(h["agrees_llm"].astype(bool).sum()), len(h)) if len(h) else None


def _modes(g: Any, a: Any) -> str:
    """The draft modes people answered under, e.g. ``hidden 3, after_commit 1`` (answers)."""
    if a is None or "draft_mode" not in a.columns or not len(a):
        return "-"
    return ", ".join(f"{k} {int(v)}" for k, v in sorted(a["draft_mode"].value_counts().items())) or "-"


def lines(figs: list[dict[str, Any]] | None) -> list[str]:
    """The card section (people are counted, never named)."""
    if not figs:
        return []
    out = [
        "## Protocol steps (people's work the recipe read)",
        "",
        "| step (corrects) | units | decided by people (changed the LLM's) | LLM's result used (why) | kept | "
        "answers refused | people (excluded) | answers by draft mode | person–LLM agreement (hidden answers) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for f in figs:
        why = ", ".join(f"{k} {v}" for k, v in sorted(f["llm_why"].items())) or "-"
        agree = f"{f['agree'][0]} of {f['agree'][1]} ({f['agree'][0] / f['agree'][1]:.0%})" if f.get("agree") else "-"
        out.append(
            f"| {f['step']} ({f['corrects']}) | {f['units']} | {f['human']} ({f['changed']}) | {f['llm']} ({why}) | "
            f"{f['kept']} | {f['refused']} | {f['people']} ({f['excluded']}) | {f.get('modes', '-')} | {agree} |"
        )
    for f in figs:
        if f.get("excluded_why"):
            who = "; ".join(f"person {i} — {why}" for i, why in enumerate(f["excluded_why"], 1))
            out += ["", f"Excluded from {f['step']} (their answers kept in `protocol_answers`, not counted): {who}."]
    note = (
        'Agreement counts only answers given with the LLM\'s draft hidden (docs/review.md "Draft modes"); '
        "answers under `suggestion` are LLM-assisted annotation: the draft was pre-filled."
    )
    return [*out, "", note, ""]
