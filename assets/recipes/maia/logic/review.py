"""The foil stage's own checks, applied to a reviewer's edit of one pair of a pool (``PaperHooks.member_check``,
``forge/review/units.py``): the paper fixed statements and foils by hand (App. A.8); an edit that
the recipe would not have kept is refused with its reason and the original stays.

* the foil must differ from the statement, and by a minimal edit (token edit ratio ≤
  ``foils.max_edit_ratio``, the recipe's ``minimal_edit_check``, App. A.7);
* the statement must not repeat another pair's statement of the same pool;
* the edited pair goes through the foil stage's NLI contradiction test (App. A.7/A.8) with the
  stage's backend (``EditChecks.nli``: the ``nli`` resource's, handed down by ``<b>_review_results``), by
  the stage's rule (``foils.nli_check``): an entailed foil is refused, a neutral one is kept (the
  paper found neutral foils valid on inspection). A failed NLI call refuses the edit with its
  error. The result stays on the verdict row (``edit_nli``), so the export gate, which runs no
  model, decides the edit alike. Where no backend was handed down and nothing was recorded, the
  edit is kept and its ``edit_note`` says the NLI test was not run.

The structural judge (an LLM judge of the foil's category) is not run on a reviewer's edit: the
reviewer is that judge here (README, "Differences from the paper").
"""

from __future__ import annotations

from typing import Any

from forge.benchmarks.review_spec import EditChecks
from forge.benchmarks.settings import recipe_settings
from forge.checks.text import canonical

from .foils import edit_size
from .language import recipe_language

SV = "statement_verification"


def pair(item: dict[str, Any]) -> tuple[str, str] | None:
    """(statement, foil) of a statement-verification item, by its option types."""
    opts, types = list(item.get("options") or []), list(item.get("option_types") or [])
    if item.get("task") != SV or len(opts) != len(types):
        return None
    st = [str(o) for o, t in zip(opts, types, strict=True) if t == "correct"]
    fo = [str(o) for o, t in zip(opts, types, strict=True) if t != "correct"]
    return (st[0], fo[0]) if len(st) == 1 and len(fo) == 1 else None


def member_check(
    new: dict[str, Any], old: dict[str, Any], others: list[dict[str, Any]], checks: EditChecks
) -> str | None:
    """Why an edited pair is refused (None when the recipe would keep it)."""
    now, was = pair(new), pair(old)
    if now is None or now == was:
        return None
    statement, foil = now
    cfg = recipe_settings("maia")
    lang = recipe_language(cfg)
    limit = float((cfg.get("foils") or {}).get("max_edit_ratio", 0.6))
    if canonical(foil) == canonical(statement):
        return "identical_foil: the foil is the statement itself (a foil must make it false)"
    _, ratio = edit_size(statement, foil, lang)
    if ratio > limit:
        return (
            f"not_minimal_edit: the foil changes {ratio:.0%} of the statement's words "
            f"(foils.max_edit_ratio {limit:.0%}; App. A.7: a minimal, category-specific edit)"
        )
    for o in others:
        p = pair(o)
        if p is not None and canonical(p[0]) == canonical(statement):
            return f"duplicate_statement: item {o['item_id']} of the same pool already states {statement[:80]!r}"
    return nli_problem(str(new.get("item_id", "")), statement, foil, checks)


def nli_problem(item_id: str, statement: str, foil: str, checks: EditChecks) -> str | None:
    """The foil stage's contradiction test on an edited pair (premise the statement, hypothesis the
    foil, as ``foils.nli_check``): refused when entailed or when the test fails; the result goes to
    ``checks.record``, what was found or not run to ``checks.notes``."""
    rec = checks.recorded
    same = rec.get("statement") == statement and rec.get("foil") == foil
    if checks.nli is not None and not (same and rec.get("label")):
        try:
            res = checks.nli.classify([(statement, foil)], [item_id])[0]
            rec = {"label": res.label, "backend": res.backend, "model": res.model, "error": res.error}
        except (RuntimeError, OSError, ValueError) as exc:  # NLIError, a failed engine: refused, never let through
            rec = {"label": None, "backend": checks.nli.name, "model": None, "error": f"{type(exc).__name__}: {exc}"}
        rec = {"statement": statement, "foil": foil, **rec}
    elif not same:
        checks.notes.append("nli: not run (no NLI backend here; the foil's contradiction test was not applied)")
        return None
    checks.record = rec
    label = rec.get("label")
    if not label:
        return f"nli_failed: {rec.get('error') or 'no label'} (the foil's contradiction test could not run)"
    if label == "entailment":
        return (
            f"nli_entailment: the foil follows from the statement ({rec.get('backend')}); "
            "App. A.7: a foil must contradict its statement"
        )
    checks.notes.append(f"nli: {label} ({rec.get('backend')})")
    return None
