"""A kind's Label Studio project, Dagster-free: created or brought up to date with its form and
settings, stamped with the database's identity (``forge/people/identity.py``), and serving its
media folder. Every kind of people's work (item review, protocol steps, the blind baseline, judge
validation) makes its projects here; each declares only its title, form and overlap.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from forge.people import identity as ident
from forge.people.client import LabelStudio
from forge.people.links import Refused, refuse_links


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
    it moved away, and why)."""
    refused = refuse_links(data_dir, [folder])
    ls.ensure_local_storage(int(project_id), str(storage or folder))
    return refused
