"""A kind of people's work, declared once (docs/review.md, "The loop").

Item review, the protocol steps, the blind baseline and judge validation are four clients of one
mechanism: each pair of assets ``<b>_<kind>_tasks`` → ``<b>_<kind>_results`` is made by one factory
(``assets/people/factory.py``) and kept moving by one sensor (``sensors/people.py``). A client
declares only what differs, as a ``PeopleKind``: its two sides (upstream deps, tables, resources,
the plain function that pushes or reads), what the sensor watches to know it is due, and what the
next stage reads (``FlowOn``). Dagster-free and spec-agnostic: a client builds its declaration
from its own spec, the factory and the sensor read nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from forge.people.client import LabelStudio
from forge.provenance.versioning import content_hash
from forge.storage import TableStore
from forge.storage.result import StageResult


@dataclass(frozen=True)
class Side:
    """What a side's function gets in a run (built by the factory from the run's resources)."""

    store: TableStore
    asset: str  # this asset's key
    review: Callable[[], LabelStudio]  # the review instance's client
    blind: Callable[[], LabelStudio]  # the blind baseline's instance
    # the ``llm`` resource's engine (every engine made is recorded in ``llm_calls`` after the run);
    # None unless the side declared ``needs={"llm"}``
    llm: Callable[[], Any] | None
    nli: Callable[[str], Any] | None  # the stage NLI backend of an edit check, built on first use
    # Label Studio down: fails the step naming ``make review`` under policy ``required``; otherwise
    # logs and returns the note the asset completes with (the second argument: what did not happen)
    down: Callable[[Exception, str], str]
    warn: Callable[[str], None]


@dataclass(frozen=True)
class Check:
    """An asset check a side declares beside its tables' contract checks."""

    name: str
    description: str


@dataclass(frozen=True)
class PairSide:
    """One asset of the pair."""

    deps: tuple[str, ...]
    description: str
    run: Callable[[Side], StageResult]  # tables (table → part → frame), rejects, metadata, checks
    tables: tuple[str, ...] = ()  # contract checks and table metadata
    needs: frozenset[str] = frozenset()  # resources beyond storage and review: "llm"
    checks: tuple[Check, ...] = ()


@dataclass(frozen=True)
class Probe:
    """What the sensor lets a kind look at on a tick (Label Studio is up)."""

    store: TableStore
    review: LabelStudio
    blind: LabelStudio
    materialized_at: Callable[[str], float | None]  # an asset's latest materialization time
    outages: int  # how often the tool was seen down: a push made while it was down is retried
    warn: Callable[[str], None]


@dataclass(frozen=True)
class Watch:
    """Why a kind is due: ``reasons`` hold while the situation lasts (a first push, unread
    annotations); ``fingerprint`` is due when it differs from the one seen at the last request."""

    reasons: list[str] = field(default_factory=list)
    fingerprint: str | None = None
    push: bool = True  # False: only the results side is due (new answers, nothing to push)


@dataclass(frozen=True)
class FlowOn:
    """What the next stage reads: a new, changed or gone human result re-runs ``read_by`` for the
    batches holding its units (queue ``build``)."""

    read_by: tuple[str, ...]
    marks: Callable[[TableStore], dict[str, str]]  # unit → its human result's mark
    changed: Callable[[Mapping[str, str], Mapping[str, str]], set[str]]
    batches: Callable[[TableStore, set[str]], Iterable[str]]


@dataclass(frozen=True)
class PeopleKind:
    """One client's pair for one benchmark."""

    owner: str  # the benchmark
    kind: str  # review, human, judge, or the step's name
    family: str  # review, human, step, judge
    group: str  # the asset group
    code_version: str | None
    tasks: PairSide
    results: PairSide
    watch: Callable[[Probe], Watch]
    # assets the loop run adds after the pair when due (read per tick, e.g. the export after a
    # review), and every one it may add (the sensor's target)
    also: Callable[[], tuple[str, ...]] = lambda: ()
    may_add: tuple[str, ...] = ()
    flow: FlowOn | None = None
    # the review policy now (read per run): under ``required`` a down tool fails the step
    policy: Callable[[], str] = lambda: "advisory"

    @property
    def key(self) -> str:
        return f"{self.owner}/{self.kind}"

    def asset(self, side: str) -> str:
        return f"{self.owner}_{self.kind}_{side}"

    @property
    def read_first(self) -> bool:
        """Read, then push (review: disputes reach adjudication in the same run)."""
        return self.asset("results") in self.tasks.deps

    def targets(self, push: bool = True) -> list[str]:
        """The pair in run order (``push`` False: the results alone), then what the loop adds."""
        pair = [self.asset("results"), self.asset("tasks")] if push else [self.asset("results")]
        return (pair if self.read_first else pair[::-1]) + list(self.also())


PROJECT_COUNTS = ("task_number", "total_annotations_number", "num_tasks_with_annotations")


def project_watch(probe: Probe, upstream: str, titles: Iterable[str]) -> Watch:
    """The watch of a kind whose units come with ``upstream``'s materialization and whose people
    answer in the projects ``titles``: the fingerprint of both (an annotation added, changed or
    removed changes a task's ``updated_at``). None while ``upstream`` never materialized; with
    no project yet, the outage count is in it, so a push made while the tool was down runs again."""
    stage = probe.materialized_at(upstream)
    if stage is None:
        return Watch()
    parts = [f"stage@{stage}"]
    for title in titles:
        project = probe.review.project_by_title(title)
        if project is not None:
            pid = int(project["id"])
            parts.append(",".join(str(project.get(k)) for k in PROJECT_COUNTS))
            parts.append(",".join(f"{t['id']}/{t.get('updated_at')}" for t in probe.review.tasks(pid)))
    if len(parts) == 1:
        parts.append(f"not pushed yet, outages {probe.outages}")
    return Watch(fingerprint=content_hash("|".join(parts), length=16))
