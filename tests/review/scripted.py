"""A scripted reviewer: Label Studio annotation results as the review form produces them."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import requests

from forge.benchmarks.review_spec import FieldLimits
from forge.people.client import LabelStudio, ReviewAPIError


def choice(name: str, value: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": "question", "type": "choices", "value": {"choices": [value]}}


def choices(name: str, *values: str) -> dict[str, Any]:
    """Several choices in one control (what a single-choice control never sends from the form)."""
    return {"from_name": name, "to_name": "question", "type": "choices", "value": {"choices": list(values)}}


def text(name: str, value: str) -> dict[str, Any]:
    return {"from_name": name, "to_name": "question", "type": "textarea", "value": {"text": [value]}}


def box(idx: int, top: float, left: float, height: float, width: float) -> dict[str, Any]:
    value = {"x": left * 100, "y": top * 100, "width": width * 100, "height": height * 100, "rotation": 0}
    return {
        "id": f"b{idx}",
        "from_name": "box",
        "to_name": "image",
        "type": "rectanglelabels",
        "value": {**value, "rectanglelabels": ["region"]},
        "original_width": 96,
        "original_height": 64,
    }


ACCEPT = [choice("verdict", "accept")]


def member(i: int, control: str, value: str) -> dict[str, Any]:
    """What member block ``i`` of a unit task sends (``m_<control>_<i>``, on the member's own text)."""
    kind = "choices" if control in ("verdict", "reason") else "textarea"
    body = {"choices": [value]} if kind == "choices" else {"text": [value]}
    return {"from_name": f"m_{control}_{i}", "to_name": f"m_text_{i}", "type": kind, "value": body}


def reject_member(task: dict[str, Any], item_id: str, reason: str) -> list[dict[str, Any]]:
    """A unit task's verdict: the unit accepted, the member ``item_id`` rejected with ``reason``."""
    i = [m["item_id"] for m in task["data"]["members"]].index(item_id)
    return [choice("verdict", "accept"), member(i, "verdict", "reject"), member(i, "reason", reason)]


def reject(reason: str) -> list[dict[str, Any]]:
    return [choice("verdict", "reject"), choice("reason", reason)]


def edit(**fields: str) -> list[dict[str, Any]]:
    return [choice("verdict", "edit"), *(text(f"corrected_{k}", v) for k, v in fields.items())]


def tasks_by_item(ls: LabelStudio, project_title_part: str) -> dict[str, dict[str, Any]]:
    out = {}
    for p in ls.projects():
        if project_title_part in p["title"]:
            for t in ls.tasks(p["id"]):
                out[t["data"]["item_id"]] = t
    return out


@dataclass(frozen=True)
class Reviewer:
    """A reviewer signed up through the organization's invite link and logged in, as a person is:
    ``client`` speaks Label Studio's API with that browser session (cookie and CSRF token), so
    Label Studio records the reviewer, not the admin, as the one who made and changed annotations."""

    id: int
    email: str
    client: LabelStudio


DOCS = Path(__file__).resolve().parents[2] / "docs" / "review.md"
_SIGNED_UP: dict[tuple[str, str], Reviewer] = {}
PASSWORD = "review-test-Passw0rd"  # a test server's throwaway reviewers


def reviewer(ls: LabelStudio, email: str) -> Reviewer:
    """``email`` signed up through the invite link (``GET /api/invite``, the *Organization* page's
    link) and logged in; once per server."""
    key = (ls.url, email)
    if key not in _SIGNED_UP:
        invite = ls.url + ls.request("GET", "/api/invite")["invite_url"]
        s = requests.Session()
        s.get(invite, timeout=30)  # the sign-up page sets the CSRF cookie, as in a browser
        form = {"email": email, "password": PASSWORD, "csrfmiddlewaretoken": s.cookies.get("csrftoken", "")}
        r = s.post(invite, data=form, headers={"Referer": invite}, allow_redirects=False, timeout=30)
        assert r.status_code == 302, f"sign-up of {email} failed: HTTP {r.status_code} {r.text[:300]}"
        s.headers.update({"X-CSRFToken": s.cookies["csrftoken"], "Referer": ls.url + "/"})
        client = LabelStudio(ls.url, token="")
        client.session = s  # the browser's session, no API token
        me = client.request("GET", "/api/current-user/whoami")
        _SIGNED_UP[key] = Reviewer(int(me["id"]), str(me["email"]), client)
    return _SIGNED_UP[key]


def open_next(rv: Reviewer, project_id: int) -> dict[str, Any] | None:
    """The task the labeling stream ("Label All Tasks") gives ``rv`` next, as the browser asks for it."""
    try:
        return rv.client.request("GET", f"/api/projects/{project_id}/next")
    except ReviewAPIError as exc:
        if "HTTP 404" in str(exc):
            return None  # nothing left for this reviewer
        raise


def annotate(rv: Reviewer, task: dict[str, Any], result: list[dict[str, Any]], seconds: float = 30.0) -> dict:
    """Submit, as the browser does: POST the annotation to the task as the logged-in reviewer."""
    body = {"result": result, "lead_time": seconds, "project": task["project"], "started_at": _now()}
    return rv.client.request("POST", f"/api/tasks/{task['id']}/annotations?project={task['project']}", json=body)


def update(rv: Reviewer, annotation: dict[str, Any], result: list[dict[str, Any]], seconds: float = 10.0) -> dict:
    """Update, as the browser does when a task opens on an existing annotation: PATCH it."""
    body = {"result": result, "lead_time": seconds, "project": annotation["project"]}
    path = f"/api/annotations/{annotation['id']}?taskID={annotation['task']}&project={annotation['project']}"
    return rv.client.request("PATCH", path, json=body)


def _now() -> str:
    return datetime.now(UTC).isoformat()


def submit(
    ls: LabelStudio, task: dict[str, Any], user: int | Reviewer, result: list[dict[str, Any]], seconds: float = 30.0
) -> None:
    """A reviewer submits; an int (a user id) is submitted by the admin on that user's behalf
    (``completed_by``), which the verdicts flag: someone other than the author made it."""
    if isinstance(user, Reviewer):
        task = task if task.get("project") else user.client.request("GET", f"/api/tasks/{task['id']}")
        annotate(user, task, result, seconds)
    else:
        ls.annotate(int(task["id"]), result, completed_by=user, lead_time=seconds)


def malformed(limits: FieldLimits) -> dict[str, list[dict[str, Any]]]:
    """Annotations Label Studio's API accepts (HTTP 201) that the review cannot read exactly, by
    case; ``REFUSAL`` gives the refusal code each must get."""
    return {
        "empty_result": [],
        "unknown_control": [choice("verdict", "accept"), choice("mood", "happy")],
        "wrong_type": [{**choice("verdict", "accept"), "type": "textarea"}],
        "unknown_verdict": [choice("verdict", "maybe")],
        "several_verdicts": [choices("verdict", "accept", "reject")],
        "no_verdict": [choice("reason", "ambiguous")],
        "no_reason": [choice("verdict", "reject")],
        "unknown_reason": reject("i_dislike_it"),
        "several_reasons": [choice("verdict", "reject"), choices("reason", "ambiguous", "bad_media")],
        "reason_note_too_long": [*reject("other"), text("reason_note", "x" * (limits.reason_note + 1))],
        "empty_question": edit(question="   "),
        "question_too_long": edit(question="q" * (limits.question + 1)),
        "answer_too_long": edit(answer="A" * (limits.answer + 1)),
        "option_too_long": edit(options="short\n" + "o" * (limits.option + 1)),
        "too_many_options": edit(options="\n".join(f"o{i}" for i in range(limits.options + 1))),
        "edit_without_changes": [choice("verdict", "edit")],
        "accept_with_corrections": [choice("verdict", "accept"), text("corrected_question", "A new question?")],
        "box_drawn": [choice("verdict", "accept"), {**box(0, 0.1, 0.1, 0.1, 0.1), "id": "xYz12"}],
    }


REFUSAL = {
    "wrong_type": "unknown_control",
    "reason_note_too_long": "too_long",
    "empty_question": "empty_field",
    "question_too_long": "too_long",
    "answer_too_long": "too_long",
    "option_too_long": "too_long",
}  # every other case's code is its name


def docs_minutes_query() -> str:
    """The query docs/review.md gives for reviewer minutes per accepted item (its ```sql block)."""
    blocks = re.findall(r"```sql\n(.*?)```", DOCS.read_text(), flags=re.S)
    (sql,) = [b for b in blocks if "minutes_per_accepted_item" in b]
    return sql
