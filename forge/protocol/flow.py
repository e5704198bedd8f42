"""How a protocol step's result flows on (docs/review.md, "Protocol steps"), Dagster-free:

* ``offline_results``: a read with Label Studio down still gives one ``protocol_results`` row per
  unit: the last read's rows stand (people's work is never lost), every unit it does not hold is
  decided by the LLM (``why_llm = no_label_studio``), so a build with no tool records who decided
  every step;
* ``decided_by``: what a stage that used a step writes on its rows and items (step → human | llm);
* ``human_marks`` and ``batches_of``: what people_sensor compares between ticks, and the batches
  of the stages reading a step that a new human result makes stale.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pandas as pd

from forge.benchmarks.protocol_spec import HumanStep
from forge.benchmarks.spec import BenchmarkSpec
from forge.protocol import steps
from forge.provenance.versioning import content_hash
from forge.storage import TableStore

NO_TOOL = "no_label_studio"  # why_llm of a unit decided while Label Studio could not be reached
DROPPED = "dropped_by_people"  # the rejects reason of a unit people dropped at a step


def offline_results(spec: BenchmarkSpec, step: HumanStep, frame: pd.DataFrame, last: pd.DataFrame) -> pd.DataFrame:
    """The step's results without Label Studio: the last read's rows, then an LLM row for every unit
    of ``frame`` the last read does not hold (its units that left the stage stay out)."""
    step = steps.configured(spec, step)
    rows = steps.units(step, frame)
    have = set(last["unit_id"].astype(str)) if len(last) else set()
    kept = last[last["unit_id"].astype(str).isin(list(rows))] if len(last) else last
    new = []
    for u, row in rows.items():
        if u in have:
            continue
        llm = spec.hooks.step_llm_values(step.name, row)
        new.append(
            {
                "benchmark": spec.name,
                "step": step.name,
                "corrects": step.corrects,
                "unit_id": u,
                "decided_by": "llm",
                "why_llm": NO_TOOL,
                "keep": steps.keeps(step, llm),
                "values": json.dumps(llm),
                "llm_values": json.dumps(llm),
                "changed": None,
                "people": None,
                "n_answers": 0,
                "n_refused": 0,
                "task_id": None,
            }
        )
    cols = list(last.columns) if len(last.columns) else steps.RESULT_COLUMNS
    frames = [f for f in (kept.reindex(columns=cols), pd.DataFrame(new).reindex(columns=cols)) if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=cols)


def decided_by(decisions: Mapping[str, Mapping[str, Mapping[str, Any]]], unit: str) -> dict[str, str]:
    """step → ``human`` | ``llm`` for one unit, over the steps a stage used (``steps.decisions`` of
    each): a unit no read holds was decided by the LLM (no person saw it)."""
    return {name: str((d.get(str(unit)) or {}).get("decided_by") or "llm") for name, d in decisions.items()}


def mark_items(
    items: pd.DataFrame, unit_of: Callable[[Mapping[str, Any]], str], decisions: Mapping[str, Mapping[str, Any]]
) -> pd.DataFrame:
    """``items`` with ``extra.decided_by`` (step → human | llm) for the unit each item was built
    from (``unit_of(row)``); ``extra`` is outside an item's revision, so marking changes none."""
    if not len(items) or "extra" not in items:
        return items
    out = items.copy()
    out["extra"] = [
        json.dumps(
            {**(json.loads(e) if isinstance(e, str) and e else {}), "decided_by": decided_by(decisions, unit_of(r))}
        )
        for e, r in zip(items["extra"], items.to_dict("records"))
    ]
    return out


def unit_in(column: str, key: str) -> Callable[[Mapping[str, Any]], str]:
    """An item's unit id from a JSON column (``labels`` / ``extra``) of the item row."""

    def get(row: Mapping[str, Any]) -> str:
        v = row.get(column)
        return str((json.loads(v) if isinstance(v, str) and v else {}).get(key))

    return get


def people_of(store: TableStore, spec: BenchmarkSpec, name: str) -> dict[str, list[str]]:
    """unit → the people whose answers decided it (the step's last read)."""
    res = steps.last(store, steps.RESULTS, steps.part(spec, steps.step_of(spec, name)))
    out: dict[str, list[str]] = {}
    for r in res.to_dict("records"):
        if r.get("decided_by") == "human" and isinstance(r.get("people"), str):
            out[str(r["unit_id"])] = list(json.loads(r["people"]))
    return out


def dropped_by_people(
    frame: pd.DataFrame,
    unit_key: str,
    decisions: Mapping[str, Mapping[str, Any]],
    people: Mapping[str, list[str]],
) -> list[tuple[str, str]]:
    """(unit, who) for each unit of ``frame`` people decided not to keep: the stage records each in
    ``rejects`` (reason ``dropped_by_people``), so a unit that left says who took it out."""
    out = []
    for u in dict.fromkeys(frame[unit_key].astype(str)) if len(frame) else ():
        d = decisions.get(u)
        if d is not None and d.get("decided_by") == "human" and not d.get("keep", True):
            out.append((u, ", ".join(people.get(u) or []) or "people"))
    return out


def human_marks(store: TableStore, spec: BenchmarkSpec, step: HumanStep) -> dict[str, str]:
    """unit → a short hash of what people decided of it (keep and values), for the units people
    decided at the step's last read: a unit added, changed or gone is a new result to pass on."""
    res = steps.last(store, steps.RESULTS, steps.part(spec, step))
    if not len(res):
        return {}
    res = res[res["decided_by"] == "human"]
    return {
        str(r["unit_id"]): content_hash(f"{bool(r['keep'])}|{r['values']}", length=8) for r in res.to_dict("records")
    }


def changed_units(before: Mapping[str, str], now: Mapping[str, str]) -> set[str]:
    return {u for u in set(before) | set(now) if before.get(u) != now.get(u)}


def batches_of(store: TableStore, step: HumanStep, units: Iterable[str]) -> list[str]:
    """The batches (files of the corrected stage) that hold any of ``units``."""
    want = {str(u) for u in units}
    if not want or not store.exists(step.corrects):
        return []
    out = []
    for part in store.parts(step.corrects):
        df = store.read(step.corrects, parts=[part])
        if step.unit_key in df and want & set(df[step.unit_key].astype(str)):
            out.append(part)
    return sorted(out)
