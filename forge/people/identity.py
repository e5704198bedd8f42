"""Which Label Studio tasks are provably this project's, Dagster-free (docs/review.md, "Identity
and reconciliation").

Label Studio numbers projects and tasks from 1 in every new database, so a replaced or restored
database shows other tasks under the ids the catalog recorded. Ids alone never decide anything:

* every project a push uses carries a **stamp** in its instructions field (``expert_instruction``;
  ``show_instruction`` stays off, so annotators never see it): a random *instance* id, the same for
  every project of one Label Studio database, and a random id of the project itself;
* every task a push creates carries an **identity** in its ``meta`` (never shown in the labeling
  form): a random task id, the instance and project stamp it was made for, the benchmark, the kind,
  the key the push matches on and the revision it shows.

A task is *ours* for a push when its identity names the stamp of the project it lives in, and the
push's benchmark, kind, key and revision (``check``). Only such a task is ever deleted or replaced.
A fresh database cannot reproduce a stamp (128 random bits), so its tasks are never taken for ours.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from forge.people.client import LabelStudio, task_payload

META = "subtext_forge"  # the key of a task's identity in its ``meta``
FIELD = "expert_instruction"  # the project field that holds the stamp
PATTERN = re.compile(r"subtext-forge-identity instance=([0-9a-f]{32}) project=([0-9a-f]{32})")


@dataclass(frozen=True)
class Stamp:
    instance: str
    project: str

    def text(self) -> str:
        return f"subtext-forge-identity instance={self.instance} project={self.project}"


def new_id() -> str:
    return uuid.uuid4().hex


def stamp_of(project: Mapping[str, Any]) -> Stamp | None:
    m = PATTERN.search(str(project.get(FIELD) or ""))
    return Stamp(m.group(1), m.group(2)) if m else None


def instances(projects: Iterable[Mapping[str, Any]]) -> set[str]:
    """The instance ids the tool's projects carry (one per database; two pushes that stamped a
    fresh database at the same time may leave two)."""
    return {s.instance for p in projects if (s := stamp_of(p)) is not None}


def instance_of(projects: Iterable[Mapping[str, Any]]) -> str | None:
    """The database's instance id: the stamp of its oldest stamped project; None when no project
    carries one (a new database, or one from before stamps)."""
    stamped = sorted((int(p["id"]), s.instance) for p in projects if (s := stamp_of(p)) is not None)
    return stamped[0][1] if stamped else None


def stamp_body(stamp: Stamp) -> dict[str, Any]:
    """Project settings that carry ``stamp`` and keep it out of annotators' sight."""
    return {FIELD: stamp.text(), "show_instruction": False}


def ensure_stamp(ls: LabelStudio, project: Mapping[str, Any], instance: str | None = None) -> dict[str, Any]:
    """``project`` with its stamp: one it carries stays; else it gets one of ``instance`` (default:
    the database's, ``instance_of``, or a new one). A project found by title without a stamp (made
    before stamps) is stamped too: its tasks without identity count as ours only where the catalog
    recorded them (``forge.people.ownership``)."""
    if stamp_of(project) is not None:
        return dict(project)
    inst = instance or instance_of(ls.projects()) or new_id()
    return ls.request("PATCH", f"/api/projects/{project['id']}", json=stamp_body(Stamp(inst, new_id())))


def identity(task: Mapping[str, Any]) -> dict[str, Any] | None:
    m = (task.get("meta") or {}).get(META) if isinstance(task.get("meta"), dict) else None
    return m if isinstance(m, dict) else None


def task_meta(stamp: Stamp, benchmark: str, kind: str, key: str, revision: str) -> dict[str, Any]:
    """The ``meta`` of a new task: its identity (``uid``: a random id of the task itself)."""
    ident = {"uid": new_id(), "instance": stamp.instance, "project": stamp.project}
    ident |= {"benchmark": benchmark, "kind": kind, "key": key, "revision": revision}
    return {META: ident}


def check(
    task: Mapping[str, Any], stamp: Stamp | None, benchmark: str, kind: str, key: str, revision: str | None
) -> str | None:
    """None when ``task`` (living in the project stamped ``stamp``) is provably the push's own task
    of ``key`` at ``revision``; else why not (``no_identity``: made before identities, or by
    someone else; ``other_project``: made for another project or database; ``other_owner``: another
    benchmark's or kind's; ``changed``: its key or revision is no longer what it was made with)."""
    m = identity(task)
    if m is None:
        return "no_identity"
    if stamp is None or m.get("instance") != stamp.instance or m.get("project") != stamp.project:
        return "other_project"
    if m.get("benchmark") != benchmark or m.get("kind") != kind:
        return "other_owner"
    if str(m.get("key")) != key or (revision is not None and str(m.get("revision")) != revision):
        return "changed"
    return None


def uid(task: Mapping[str, Any]) -> str:
    """The task's own random id ("" for a task without identity)."""
    m = identity(task)
    return str(m.get("uid") or "") if m else ""


class Owner:
    """A push path that only adds tasks (protocol steps, judge validation) in one project: the
    project stamped, the tasks it may count and read as its own (identity verified for
    ``benchmark`` and ``kind``, the key in data field ``key_field``; or no identity at all: made
    before identities, counted as before), and new tasks made with an identity."""

    def __init__(self, ls: LabelStudio, project_id: int, benchmark: str, kind: str, key_field: str):
        self.ls, self.pid, self.benchmark, self.kind, self.key_field = ls, int(project_id), benchmark, kind, key_field
        self.stamp = stamp_of(ensure_stamp(ls, ls.request("GET", f"/api/projects/{self.pid}")))
        self.others = 0  # tasks of the project that are not this path's: never counted or read
        self.resigned = 0  # tasks whose pre-signed media URLs the last ``push.add_new`` renewed

    def key(self, task: Mapping[str, Any]) -> str:
        return str((task.get("data") or {}).get(self.key_field))

    def tasks(self) -> list[dict[str, Any]]:
        out, self.others = [], 0
        for t in self.ls.tasks(self.pid):
            if check(t, self.stamp, self.benchmark, self.kind, self.key(t), None) in (None, "no_identity"):
                out.append(t)
            else:
                self.others += 1
        return out

    def create(self, data: dict[str, Any], predictions: list[dict[str, Any]] | None = None) -> int:
        assert self.stamp is not None  # ensure_stamp gave the project one
        meta = task_meta(self.stamp, self.benchmark, self.kind, str(data.get(self.key_field)), "")
        return self.ls.create_task(self.pid, data, predictions, meta=meta)

    def create_many(self, tasks: list[tuple[dict[str, Any], list[dict[str, Any]] | None]]) -> list[int]:
        """``create`` for many (data, predictions) pairs in one import request."""
        assert self.stamp is not None
        payloads = [
            task_payload(d, preds, task_meta(self.stamp, self.benchmark, self.kind, str(d.get(self.key_field)), ""))
            for d, preds in tasks
        ]
        return self.ls.create_tasks(self.pid, payloads)
