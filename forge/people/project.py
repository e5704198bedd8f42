"""A kind's Label Studio project, Dagster-free: created or brought up to date with its form and
settings, stamped with the database's identity (``forge/people/identity.py``), and serving its
media folder. Every kind of people's work (item review, protocol steps, the blind baseline, judge
validation) makes its projects here; each declares only its title, form and overlap.

Served media: on a local data dir a task names its files as Label Studio's local-files URLs
(``/data/local-files/?d=<path>``) and the project serves the folder holding them. On object
storage (``SUBTEXT_DATA_URL``) no folder is served: ``served`` turns each such URL into a
pre-signed GET URL of the same file's object (``forge.storage.trees.presigned_url``), which the
people's browsers fetch from the bucket's endpoint without credentials.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from forge.people import identity as ident
from forge.people.client import LabelStudio
from forge.people.links import Refused, refuse_links
from forge.people.push import Wanted
from forge.storage.location import is_remote, location_of
from forge.storage.tables import TableStore
from forge.storage.trees import presigned_url

LOCAL_FILES = "/data/local-files/?d="  # Label Studio's URL of a file below a local-files storage


def settings(overlap: int, description: str, predictions: bool = True) -> dict[str, Any]:
    """Label Studio project settings that give each person an annotation of their own: a task
    takes ``overlap`` annotations (the people a unit needs), every task gets the full overlap,
    and the labeling stream ("Label All Tasks") hands each person the next task they have not
    annotated (``sampling``; Label Studio 1.23.2 accepts "Sequential sampling", "Uniform sampling"
    and "Uncertainty sampling"; each leaves out the tasks the person already annotated).
    ``predictions``: the tasks' pre-annotations are shown (an item's boxes, pre-drawn and editable)."""
    return {
        "maximum_annotations": overlap,
        "overlap_cohort_percentage": 100,
        "sampling": "Sequential sampling",  # in task order, so a team's items finish together
        "show_overlap_first": False,  # every task has the same overlap: nothing to put first
        "enable_empty_annotation": False,  # the form refuses an empty submit (the reader refuses one too)
        "show_collab_predictions": predictions,
        "description": description,
    }


def ensure(
    ls: LabelStudio, title: str, config: str, options: Mapping[str, Any], instance: str | None = None
) -> dict[str, Any]:
    """The project named ``title`` with form ``config`` and settings ``options`` (created, or
    brought up to date), carrying the identity stamp of ``instance`` (None: the database's own,
    or a new one)."""
    return ident.ensure_stamp(ls, ls.ensure_project(title, config, **options), instance)


def serve(ls: LabelStudio, project_id: int, data_dir: Path, folder: Path, storage: Path | None = None) -> list[Refused]:
    """The project reads its media from ``storage`` (default ``folder``) through a local-files
    storage; ``folder``, the served tree, holds regular files only (``links.refuse_links``: what
    it moved away, and why). On object storage nothing is served from this machine: the tasks
    carry pre-signed URLs (``served``)."""
    if is_remote(location_of(data_dir)):
        return []
    refused = refuse_links(data_dir, [folder])
    ls.ensure_local_storage(int(project_id), str(storage or folder))
    return refused


def served_url(store: TableStore, value: str, root: str, within: str) -> str:
    """``value`` as Label Studio must be handed it: unchanged on a local data dir, or when it is
    not a local-files URL; on object storage, a local-files URL of a file below ``within`` becomes
    the pre-signed URL of its object (key ``<root>/<path>``). A URL naming anything outside
    ``within`` (``..``, another folder: a text that looks like one) stays as it is, as Label Studio
    would refuse to serve it from a local-files storage on ``within``."""
    if store.remote is None or not value.startswith(LOCAL_FILES):
        return value
    rel = unquote(value[len(LOCAL_FILES) :]).lstrip("/")
    key = posixpath.normpath(posixpath.join(root.strip("/"), rel))
    if ".." in rel.split("/") or not key.startswith(within.strip("/") + "/"):
        return value
    return presigned_url(store, key)


def _served_value(store: TableStore, value: Any, root: str, within: str) -> Any:
    if isinstance(value, str):
        return served_url(store, value, root, within)
    if isinstance(value, list):
        return [_served_value(store, v, root, within) for v in value]
    if isinstance(value, dict):
        return {k: _served_value(store, v, root, within) for k, v in value.items()}
    return value


def served(store: TableStore, wanted: Mapping[str, Wanted], root: str = "", within: str = "media") -> dict[str, Wanted]:
    """The tasks of ``wanted`` with their media reachable by Label Studio: as they are on a local
    data dir (the project's local-files storage serves ``within``); on object storage every
    local-files URL of a file below ``within`` (data-location relative; the URLs are relative to
    ``root``, the instance's document root) replaced by a pre-signed URL of its object. The task's
    key and revision are untouched, so a push keeps, replaces and retires tasks as before."""
    if store.remote is None:
        return dict(wanted)
    return {k: Wanted(_served_value(store, w.data, root, within), w.predictions) for k, w in wanted.items()}
