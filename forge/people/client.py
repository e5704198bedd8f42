"""A small Label Studio REST client (``requests``), Dagster-free.

Only the endpoints review needs: projects, local-files storage, tasks (with predictions),
annotations, users. ``label-studio-sdk`` lives in the tool's own environment (its pins clash
with the project's), so the project speaks the documented REST API directly. Authentication is
the legacy ``Authorization: Token <token>`` header (``make review`` enables it).

Every failure to use the server raises ``ReviewServerDown`` with a message that says which it is,
not reachable (names ``make review``) or reachable but failing (``ReviewServerFailing``, HTTP 5xx:
never read as "not found"), so an asset fails with the way out in its first line and writes nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import requests

START_HINT = "start it with `make review` (Label Studio on 127.0.0.1; docs/review.md)"
PAGE = 100


class ReviewServerDown(RuntimeError):
    """Label Studio cannot be used: not reachable, failing (HTTP 5xx), or refusing the token."""


class ReviewServerFailing(ReviewServerDown):
    """Label Studio is reachable but answers with a server error (HTTP 5xx): running, not working."""


class ReviewAPIError(RuntimeError):
    """Label Studio answered with an error about the request (HTTP 4xx)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.status = status


def failing(url: str, status: int, where: str) -> str:
    return (
        f"Label Studio at {url} is reachable but failing (HTTP {status} on {where}): see its server.log "
        "under <data dir>/review, or restart it with `make review`"
    )


def task_payload(
    data: dict[str, Any], predictions: list[dict[str, Any]] | None = None, meta: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One task as Label Studio's import takes it (``meta``: never shown in the form)."""
    task: dict[str, Any] = {"data": data, **({"predictions": predictions} if predictions else {})}
    return task | ({"meta": meta} if meta else {})


class LabelStudio:
    def __init__(self, url: str, token: str, timeout: float = 30.0):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Token {token}"

    # -- plumbing ---------------------------------------------------------------------------------
    def unreachable(self, exc: BaseException) -> str:
        return f"Label Studio is not reachable at {self.url} ({exc.__class__.__name__}); {START_HINT}"

    def request(self, method: str, path: str, **kw: Any) -> Any:
        try:
            r = self.session.request(method, f"{self.url}{path}", timeout=self.timeout, **kw)
        except requests.RequestException as exc:
            raise ReviewServerDown(self.unreachable(exc)) from exc
        if r.status_code in (401, 403):
            raise ReviewServerDown(
                f"Label Studio at {self.url} refused the API token (HTTP {r.status_code}); "
                f"{START_HINT}, or set SUBTEXT_REVIEW_TOKEN to its admin token"
            )
        if r.status_code == 404 and method == "DELETE":
            return None  # already gone: deleting is idempotent
        if r.status_code >= 500:  # never read as "not found": a failing server deleted nothing
            raise ReviewServerFailing(failing(self.url, r.status_code, f"{method} {path}"))
        if r.status_code >= 400:
            raise ReviewAPIError(f"{method} {path}: HTTP {r.status_code}: {r.text[:500]}", r.status_code)
        if r.status_code == 204 or not r.content:
            return None
        return r.json()

    def probe(self) -> int | None:
        """The HTTP status of ``/health`` (200 only when it reports UP; a wrong answer counts as 502),
        None when nothing answers."""
        try:
            r = self.session.get(f"{self.url}/health", timeout=5)
        except requests.RequestException:
            return None
        try:
            up = r.ok and r.json().get("status") == "UP"
        except ValueError:
            up = False
        return 200 if up else (r.status_code if r.status_code >= 400 else 502)

    def health(self) -> bool:
        return self.probe() == 200

    def ensure_up(self) -> None:
        """Raises ``ReviewServerDown`` saying which: not reachable, reachable but failing (HTTP 5xx
        or a wrong answer: ``ReviewServerFailing``), or refusing the token."""
        status = self.probe()
        if status is None:
            raise ReviewServerDown(f"Label Studio is not reachable at {self.url}; {START_HINT}")
        if status != 200:
            raise ReviewServerFailing(failing(self.url, status, "GET /health"))
        self.request("GET", "/api/current-user/whoami")  # the token works

    def _pages(self, path: str, params: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        page = 1
        while True:
            data = self.request("GET", path, params={**(params or {}), "page": page, "page_size": PAGE})
            rows = data if isinstance(data, list) else data.get("results", data.get("tasks", []))
            yield from rows
            total = None if isinstance(data, list) else data.get("count", data.get("total"))
            if isinstance(data, list) or not rows or (total is not None and page * PAGE >= total):
                return
            page += 1

    # -- projects -----------------------------------------------------------------------------------
    def projects(self) -> list[dict[str, Any]]:
        return list(self._pages("/api/projects"))

    def project_by_title(self, title: str) -> dict[str, Any] | None:
        return next((p for p in self.projects() if p.get("title") == title), None)

    def ensure_project(self, title: str, label_config: str, **settings: Any) -> dict[str, Any]:
        """The project named ``title`` (created, or its config / settings brought up to date)."""
        body = {"title": title, "label_config": label_config, **settings}
        p = self.project_by_title(title)
        if p is None:
            return self.request("POST", "/api/projects", json=body)
        if p.get("label_config") != label_config or any(p.get(k) != v for k, v in settings.items()):
            return self.request("PATCH", f"/api/projects/{p['id']}", json=body)
        return p

    def ensure_local_storage(self, project_id: int, path: str, title: str = "subtext-media") -> None:
        """A local-files storage on ``path`` (never synced: tasks name their files themselves).
        Label Studio serves ``/data/local-files/?d=`` only below such a storage's path."""
        have = self.request("GET", "/api/storages/localfiles", params={"project": project_id}) or []
        if any(s.get("path") == path for s in have):
            return
        self.request(
            "POST",
            "/api/storages/localfiles",
            json={"project": project_id, "path": path, "title": title, "use_blob_urls": False},
        )

    # -- tasks and annotations ------------------------------------------------------------------------
    def tasks(self, project_id: int) -> list[dict[str, Any]]:
        return list(self._pages("/api/tasks", {"project": project_id, "fields": "all"}))

    def create_task(
        self,
        project_id: int,
        data: dict[str, Any],
        predictions: list[dict[str, Any]] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> int:
        """One task (and its pre-annotations) through the project's import, as Label Studio adds
        tasks; returns the task id. Imported, a task takes the project's overlap
        (``maximum_annotations``); ``POST /api/tasks`` leaves it at 1, and the labeling stream would
        then hand it to one reviewer only. ``meta``: never shown in the form (the task's identity,
        ``forge/people/identity.py``)."""
        return self.create_tasks(project_id, [task_payload(data, predictions, meta)])[0]

    def create_tasks(self, project_id: int, tasks: list[dict[str, Any]]) -> list[int]:
        """Many tasks (``task_payload``) in one import request: their ids, in the order given. Label
        Studio creates one import's tasks in one transaction, in order, so a batch is made whole or
        not at all; one request per task cost a first push of 864 tasks a minute."""
        if not tasks:
            return []
        out = self.request("POST", f"/api/projects/{project_id}/import", params={"return_task_ids": "true"}, json=tasks)
        ids = [int(i) for i in (out or {}).get("task_ids") or []]
        if len(ids) != len(tasks):
            raise ReviewAPIError(f"import into project {project_id}: {len(tasks)} tasks sent, {len(ids)} ids back")
        return ids

    def update_task_data(self, task_id: int, data: dict[str, Any]) -> None:
        """Replace a task's ``data`` (its media URLs renewed: ``forge/people/resign.py``); its
        annotations, predictions and ``meta`` are other records and stay as they are."""
        self.request("PATCH", f"/api/tasks/{task_id}", json={"data": data})

    def delete_task(self, task_id: int) -> None:
        self.request("DELETE", f"/api/tasks/{task_id}")

    def annotations(self, task_id: int) -> list[dict[str, Any]]:
        return self.request("GET", f"/api/tasks/{task_id}/annotations") or []

    def annotate(self, task_id: int, result: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        """Submit an annotation (``completed_by`` may name another user: scripted reviewers)."""
        return self.request("POST", f"/api/tasks/{task_id}/annotations", json={"result": result, **extra})

    # -- users ----------------------------------------------------------------------------------------
    def users(self) -> dict[int, str]:
        """user id → email (the reviewer's name in the verdicts table)."""
        return {int(u["id"]): str(u.get("email") or u.get("username") or u["id"]) for u in self._pages("/api/users")}

    def ensure_user(self, email: str) -> int:
        for uid, mail in self.users().items():
            if mail == email:
                return uid
        u = self.request("POST", "/api/users", json={"email": email, "username": email})
        return int(u["id"])

    # -- data manager tabs (the review loop's returned tasks) ----------------------------------------
    def ensure_view(self, project_id: int, title: str, filters: list[dict[str, Any]]) -> dict[str, Any]:
        """A Data Manager tab of the project named ``title`` showing the tasks that match every
        filter (``{"filter": "filter:tasks:data.<field>", "operator", "type", "value"}``); tabs are
        shared by the organisation's members."""
        have = self.request("GET", "/api/dm/views", params={"project": project_id}) or []
        for v in have:
            if (v.get("data") or {}).get("title") == title:
                return v
        data = {"title": title, "filters": {"conjunction": "and", "items": filters}}
        return self.request("POST", "/api/dm/views", json={"project": project_id, "data": data})

    # -- overlap: one annotation per reviewer --------------------------------------------------------
    def ensure_overlap(self, project_id: int, overlap: int) -> int:
        """Every task of the project takes ``overlap`` annotations; returns how many tasks did not.
        Tasks made with ``POST /api/tasks`` (before tasks were imported: an adopted older project)
        kept overlap 1, and the labeling stream hands such a task to one reviewer only. Label Studio
        re-applies ``maximum_annotations`` to every task, recounting which are done, when the
        setting changes, so the project's setting is moved away and back."""
        off = sum(1 for t in self.tasks(project_id) if t.get("overlap") != overlap)
        if off:
            for n in (overlap + 1 if overlap == 1 else 1, overlap):
                self.request("PATCH", f"/api/projects/{project_id}", json={"maximum_annotations": n})
        return off
