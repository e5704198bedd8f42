"""The entry point an export's lmms-eval task folder calls (its ``utils.py``, written by
``forge/export/lmms.py``): the one place where the task's benchmark name becomes its spec, as
``cli/build.py`` is for a build; ``forge/evals/lmms_task.py`` does the work from the spec."""

from __future__ import annotations

from pathlib import Path

from forge.benchmarks.registry import get
from forge.evals.lmms_task import ExportTask

_TASKS: dict[tuple[str, str], ExportTask] = {}


def task_for(export_dir: str | Path, benchmark: str) -> ExportTask:
    """One ``ExportTask`` per export per process (every setting's YAML shares it)."""
    key = (str(Path(export_dir).resolve()), benchmark)
    if key not in _TASKS:
        _TASKS[key] = ExportTask(Path(export_dir), get(benchmark))
    return _TASKS[key]
