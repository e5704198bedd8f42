"""Refusal and return, with a reason, for every kind of people's work, Dagster-free.

An answer is read exactly or refused with a reason for people, never guessed: a skip gives no
answer (``skipped``), a control or object the form does not have is refused, never ignored
(``control_problem``), and an answer changed by someone other than its author is flagged
(``forge.people.read.who``). A refused or flagged answer is kept with its reason and never counts;
where the kind returns it (the review loop's ``returned`` project), it goes back to its author
(``back_to``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

SKIP = "skipped: the task was skipped (Label Studio's Skip)"


def skipped(gives: str) -> str:
    """Why a skip is refused: it gives no ``gives`` (a verdict, a rating, an answer)."""
    return f"{SKIP}, which gives no {gives}"


def control_problem(result: Any, controls: Mapping[str, tuple[str, str]], form: str = "the form") -> str | None:
    """Why an annotation's ``result`` is not the form's (None when every entry is): ``controls``
    maps each control of the form to (the result type Label Studio gives it, the object it is
    about); an unknown control or type, or a control about another object, is refused."""
    for r in result or []:
        name, kind, to = (r.get("from_name"), r.get("type"), r.get("to_name")) if isinstance(r, dict) else (None,) * 3
        want = controls.get(str(name))
        if want is None or want[0] != kind:
            return f"unknown_control: {name!r} ({kind}) is not a control of {form}"
        if want[1] != to:  # an answer about an object the form does not have is read as nothing
            return f"unknown_target: {name!r} names {to!r}; the form's {name} is about {want[1]!r}"
    return None


def back_to(person: str, author: str | None, refused: bool) -> tuple[str, str]:
    """(who gets a returned answer back, what happened to it): an answer someone else changed goes
    back to its author, unless the change itself was refused; any other to the person who gave it."""
    if isinstance(author, str) and author != person and not refused:
        return author, "changed by someone else"
    return person, "not taken"
