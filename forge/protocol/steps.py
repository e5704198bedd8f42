"""Human protocol steps on Label Studio (docs/review.md, "Protocol steps"), Dagster-free.

* ``push``: the units of the stage a step corrects (its declared sample) become tasks of the step's
  one project; a unit that already has a task is left alone, so pushing again adds only new units.
  The LLM's answer goes with them only under ``DraftMode.SUGGESTION`` (a *prediction*,
  ``model_version``: the model that wrote it); ``hidden`` and ``after_commit`` tasks carry no
  prediction and no draft display, and the project does not show predictions.
* ``read``: every annotation back (table ``protocol_answers``, each with the ``draft_mode`` it was
  given under), then one row per unit (table ``protocol_results``): the human result where valid
  human answers exist, the LLM's otherwise, with ``decided_by`` saying which. A refused answer (a
  rating outside the scale, an empty answer) never counts; a person below the control threshold is
  excluded, with the reason. Under ``after_commit`` a unit a person has answered gets a task in the
  step's second-pass project, which shows the draft; a second-pass answer is recorded as its own
  row (``draft_mode = after_commit``) and replaces that person's first answer in the result.
* ``decisions``: what the recipe stage after the step reads.
"""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace
from typing import Any
from urllib.parse import quote

import pandas as pd

from forge.benchmarks.hooks import PaperHooks
from forge.benchmarks.protocol_spec import Control, DraftMode, FieldKind, HumanStep, StepSample
from forge.benchmarks.settings import recipe_settings
from forge.benchmarks.spec import BenchmarkSpec
from forge.people import identity as ident
from forge.people import project
from forge.people.client import LabelStudio
from forge.people.push import Wanted, add_new
from forge.people.read import lead_time, who
from forge.people.refusal import SKIP
from forge.people.sample import pick
from forge.protocol import form
from forge.storage import TableStore

RESULTS = "protocol_results"
ANSWERS = "protocol_answers"


def part(spec: BenchmarkSpec, step: HumanStep) -> str:
    """The partition of a step in both tables: one file per benchmark and step."""
    return f"{spec.name}__{step.name}"


SECOND_PASS = " · second pass"  # the title suffix of a step's second-pass project (after_commit)


def title(spec: BenchmarkSpec, step: HumanStep, second: bool = False) -> str:
    return f"{spec.title} {step.name} · {spec.name}" + (SECOND_PASS if second else "")


def step_of(spec: BenchmarkSpec, name: str) -> HumanStep:
    for s in spec.human_steps:
        if s.name == name:
            return configured(spec, s)
    raise KeyError(f"{spec.name} declares no human step {name!r} (BenchmarkSpec.human_steps)")


SETTABLE = ("share", "count", "seed", "annotators", "thresholds", "draft", "controls")
CONTROL_SETTINGS = ("rate", "min_answered", "threshold")


def configured(spec: BenchmarkSpec, step: HumanStep) -> HumanStep:
    """The step as the recipe's settings say (``protocol: <step>: {share | count, seed, annotators,
    thresholds, draft, controls: {rate, min_answered, threshold}}`` in its config.yaml, under the
    active profile); the paper's declaration otherwise. ``draft: suggestion`` is LLM-assisted
    annotation (docs/review.md "Draft modes")."""
    try:
        cfg = (recipe_settings(spec.name).get("protocol") or {}).get(step.name) or {}
    except (FileNotFoundError, TypeError, ValueError):  # a plug-in without a settings file
        cfg = {}
    unknown = sorted(set(cfg) - set(SETTABLE))
    if unknown:
        raise ValueError(f"{spec.name} protocol.{step.name}: unknown settings {unknown} (allowed: {SETTABLE})")
    if not cfg:
        return step
    sample = step.sample
    if {"share", "count", "seed"} & set(cfg):
        seed = str(cfg.get("seed", sample.seed))
        sample = StepSample(share=cfg.get("share"), count=cfg.get("count"), seed=seed)
    return replace(
        step,
        sample=sample,
        annotators=int(cfg.get("annotators", step.annotators)),
        thresholds={**step.thresholds, **(cfg.get("thresholds") or {})},
        draft=_mode(spec, step, cfg.get("draft", step.draft)),
        control=_control(spec, step, cfg.get("controls")),
    )


def _control(spec: BenchmarkSpec, step: HumanStep, cfg: Any) -> Control | None:
    """The step's control screening with the recipe's ``controls`` settings over the paper's."""
    if not cfg:
        return step.control
    where = f"{spec.name} protocol.{step.name}.controls"
    if step.control is None:
        raise ValueError(f"{where}: the step declares no control questions")
    unknown = sorted(set(cfg) - set(CONTROL_SETTINGS))
    if unknown:
        raise ValueError(f"{where}: unknown settings {unknown} (allowed: {CONTROL_SETTINGS})")
    c = step.control
    try:
        return replace(
            c,
            rate=float(cfg.get("rate", c.rate)),
            min_answered=int(cfg.get("min_answered", c.min_answered)),
            threshold=float(cfg.get("threshold", c.threshold)),
        )
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _mode(spec: BenchmarkSpec, step: HumanStep, value: Any) -> DraftMode:
    try:
        return DraftMode(str(value))
    except ValueError:
        allowed = [m.value for m in DraftMode]
        raise ValueError(f"{spec.name} protocol.{step.name}.draft: {value!r} is not one of {allowed}") from None


# -- the sample ------------------------------------------------------------------------------------


def sampled(units: list[str], sample: StepSample) -> set[str]:
    """The units the step asks about: its share or count, drawn by the people loop's one seeded
    sample (``forge.people.sample``: a unit's membership never changes when others arrive)."""
    return pick(units, sample.seed, share=sample.share, count=sample.count)


def units(step: HumanStep, frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """unit id → its row of the corrected stage (the first row of a unit id that repeats)."""
    out: dict[str, dict[str, Any]] = {}
    for r in frame.to_dict("records"):
        out.setdefault(str(r[step.unit_key]), r)
    return out


def stage_frame(store: TableStore, spec: BenchmarkSpec, step: HumanStep) -> pd.DataFrame:
    """The corrected stage's rows (every partition), with the step's joined columns, as the paper
    prepares them (``hooks.prepare_step``)."""
    if not store.exists(step.corrects):
        raise ValueError(f"{step.corrects} has no rows yet: materialize it before its human step {step.name!r}")
    df = store.read(step.corrects)
    for table, cols in step.joins:
        other = store.read(table)[[step.unit_key, *cols]].drop_duplicates(step.unit_key)
        df = df.merge(other, on=step.unit_key, how="left", suffixes=("", f"_{table}"))
    return spec.hooks.prepare_step(
        step.name, df, lambda table: store.read(table) if store.exists(table) else pd.DataFrame()
    )


# -- push --------------------------------------------------------------------------------------------


def local_url(rel: str) -> str:
    """Label Studio's URL of a file under its document root (the data dir)."""
    return "/data/local-files/?d=" + quote(str(rel).lstrip("/"))


def task_data(
    spec: BenchmarkSpec, step: HumanStep, unit: str, row: Mapping[str, Any], with_draft: bool = False
) -> dict[str, Any]:
    """What a task shows of ``row`` (the paper's ``hooks.step_task_data``): the draft displays' keys
    only ``with_draft`` (never in a form the person answers before seeing the LLM's draft)."""
    data = dict(spec.hooks.step_task_data(step.name, row))
    for d in step.display:
        if d.draft and not with_draft:
            data.pop(d.name, None)
            continue
        if d.kind == "image" and data.get(d.name):
            data[d.name] = local_url(str(data[d.name]))
        elif d.kind == "images":
            data[d.name] = [local_url(str(p)) for p in data.get(d.name) or []]
        elif d.kind == "video" and data.get(d.name):  # the clip itself, played in the form
            data[d.name] = local_url(str(data[d.name]))
    return {**data, "unit_id": unit}


def ensure_project(
    ls: LabelStudio, store: TableStore, spec: BenchmarkSpec, step: HumanStep, second: bool = False
) -> int:
    """The step's project (its form, overlap = people per unit), serving the data dir's media;
    ``second``: its second-pass project (``after_commit``), whose form shows the draft. Label Studio
    shows predictions only where the draft is meant to be seen."""
    shows = second or step.draft.shows_draft
    what = (
        "second pass: the LLM's draft shown after your own answer"
        if second
        else {
            DraftMode.HIDDEN: "answer on your own (the LLM's draft is not shown)",
            DraftMode.AFTER_COMMIT: "answer on your own; the LLM's draft is shown after, in the second-pass project",
            DraftMode.SUGGESTION: "LLM-assisted annotation: the LLM's draft is pre-filled",
        }[step.draft]
    )
    desc = f"Subtext Forge protocol step {step.name} of {spec.title} ({what}): {step.note}".strip()
    options = {"description": desc, "maximum_annotations": step.annotators, "show_collab_predictions": shows}
    pid = int(project.ensure(ls, title(spec, step, second), form.label_config(step, with_draft=shows), options)["id"])
    if any(d.kind in ("image", "images", "video") for d in step.display):
        project.serve(ls, pid, store.data_dir, store.data_dir.resolve() / "media")
    return pid


def push(
    ls: LabelStudio, store: TableStore, spec: BenchmarkSpec, step: HumanStep, frame: pd.DataFrame
) -> dict[str, int]:
    """Tasks for the sampled units that have none yet; returns the counts."""
    step = configured(spec, step)
    ls.ensure_up()
    pid = ensure_project(ls, store, spec, step)
    rows = units(step, frame)
    want = sampled(sorted(rows), step.sample)
    own = ident.Owner(ls, pid, spec.name, kind_of(step), "unit_id")  # only its own tasks count
    # the queue spreads the controls among the new units only (what is there stays where it is)
    new = add_new(
        own,
        _wanted(store, spec, step, rows, sorted(want), step.draft.shows_draft),
        lambda ks: queue(spec, step, rows, ks),
    )
    counts = {"units": len(rows), "sampled": len(want), "pushed": len(new), "already_there": len(want) - len(new)}
    return (
        counts | ({"not_ours": own.others} if own.others else {}) | ({"resigned": own.resigned} if own.resigned else {})
    )


def is_control(spec: BenchmarkSpec, step: HumanStep, row: Mapping[str, Any]) -> bool:
    return step.control is not None and spec.hooks.step_controls(step.name, row) is not None


def queue(spec: BenchmarkSpec, step: HumanStep, rows: Mapping[str, Mapping[str, Any]], new: list[str]) -> list[str]:
    """The order new units become tasks (Label Studio serves a project's tasks in that order): the
    control units spread among the others at the step's control rate (one in every ``1 / rate``,
    the first within the first stretch), so every annotator meets them while working through the
    queue; controls left over follow at the end (they are questions of the benchmark too)."""
    if step.control is None:
        return new
    ctrl = [u for u in new if is_control(spec, step, rows[u])]
    rest = [u for u in new if u not in set(ctrl)]
    every = max(1, round(1 / step.control.rate))  # positions per control
    out: list[str] = []
    while rest or ctrl:
        if ctrl and (len(out) % every == every // 2 or not rest):  # a control in the middle of each stretch
            out.append(ctrl.pop(0))
        else:
            out.append(rest.pop(0))
    return out


def kind_of(step: HumanStep, second: bool = False) -> str:
    """The kind a step's tasks carry in their identity (forge/people/identity.py)."""
    return f"protocol:{step.name}" + (":second" if second else "")


def _draft(spec: BenchmarkSpec, step: HumanStep, row: Mapping[str, Any]) -> dict[str, Any] | None:
    """The LLM's answer of ``row`` as a prediction, None when it has no value to show."""
    pred = form.prediction(step, spec.hooks.step_llm_values(step.name, row), written_by(row))
    return pred if pred["result"] else None


def written_by(row: Mapping[str, Any]) -> str:
    """Who wrote the draft, as its prediction's ``model_version``: ``stub`` for the offline stub
    backend (its rows carry the configured model's name, which did not write them), else the model."""
    if str(row.get("backend") or "") == "stub":
        return "stub"
    return str(row.get("model") or row.get("backend") or "llm")


def second_pass(
    ls: LabelStudio,
    store: TableStore,
    spec: BenchmarkSpec,
    step: HumanStep,
    rows: Mapping[str, Mapping[str, Any]],
    answered: set[str],
) -> int:
    """``after_commit``: a second-pass task, with the draft, for every unit someone has answered
    (a unit never gets one before an answer exists); returns how many were added."""
    pid = ensure_project(ls, store, spec, step, second=True)
    own = ident.Owner(ls, pid, spec.name, kind_of(step, second=True), "unit_id")
    return len(add_new(own, _wanted(store, spec, step, rows, sorted(answered & set(rows)), True)))


def _wanted(
    store: TableStore,
    spec: BenchmarkSpec,
    step: HumanStep,
    rows: Mapping[str, Mapping[str, Any]],
    order: list[str],
    shows: bool,
) -> dict[str, Wanted]:
    """unit → its task, in ``order``: the draft as a prediction only where the form ``shows`` it;
    media served from the data location (pre-signed URLs on object storage: ``project.served``)."""
    out = {}
    for u in order:
        pred = _draft(spec, step, rows[u]) if shows else None
        out[u] = Wanted(task_data(spec, step, u, rows[u], with_draft=shows), [pred] if pred else [])
    return project.served(store, out)


# -- read ---------------------------------------------------------------------------------------------


def _answer_rows(
    ls: LabelStudio,
    spec: BenchmarkSpec,
    step: HumanStep,
    pid: int,
    rows: Mapping[str, Mapping[str, Any]],
    mode: DraftMode,
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One row per annotation of project ``pid``, given under draft ``mode``."""
    users = ls.users()
    out, task_of = [], {}
    own = ident.Owner(ls, pid, spec.name, kind_of(step, second=mode is DraftMode.AFTER_COMMIT), "unit_id")
    for t in own.tasks():  # another's task in the project (a replaced database's) is never read
        unit = str(t["data"].get("unit_id"))
        task_of[unit] = int(t["id"])
        known = spec.hooks.step_controls(step.name, rows[unit]) if unit in rows else None
        for a in t.get("annotations") or []:  # the task list carries them: one request per page, not per task
            values, refused = None, None
            try:
                if a.get("was_cancelled"):  # a skip gives no answer: recorded with why, never counted
                    raise form.Refused("skipped", "result", SKIP.removeprefix("skipped: "))
                values = form.read(step, a.get("result"))
            except form.Refused as exc:
                refused = str(exc)
            llm = spec.hooks.step_llm_values(step.name, rows[unit]) if unit in rows else {}
            out.append(
                {
                    "benchmark": spec.name,
                    "step": step.name,
                    "answer_id": f"{pid}:{a['id']}",
                    "unit_id": unit,
                    "task_id": int(t["id"]),
                    "person": who(a, users)[0],
                    "values": json.dumps(values) if values is not None else None,
                    "refused": refused,
                    "control": known is not None,
                    "control_correct": None,  # judged below, all of the read's control answers at once
                    "control_judge": None,
                    "known": known,
                    "excluded": None,
                    "seconds": lead_time(a),
                    "created_at": pd.Timestamp(a["created_at"]) if a.get("created_at") else None,
                    "draft_mode": mode.value,
                    "agrees_llm": (not _changed(step, values, llm)) if values is not None and llm else None,
                }
            )
    return out, task_of


def judge_controls(spec: BenchmarkSpec, step: HumanStep, answers: list[dict[str, Any]], engine: Any = None) -> None:
    """Fill ``control_correct`` / ``control_judge`` of the control answers: the paper's judge where
    the step's control is ``judged`` (``hooks.control_judge``, given ``engine``; it falls back to
    the offline rule itself), else the rule (``hooks.control_check``; shared: equality with the
    known values)."""
    todo = [a for a in answers if a.get("known") is not None and a["values"] is not None]
    if step.control is None or not todo:
        return
    pairs = [(a["known"], json.loads(a["values"])) for a in todo]
    # an unjudged step gets the shared judge, which is the paper's rule (``control_check``) per pair
    judge = spec.hooks.control_judge if step.control.judged else functools.partial(PaperHooks.control_judge, spec.hooks)
    verdicts = judge(step.name, engine, pairs)
    for a, (right, by) in zip(todo, verdicts, strict=True):
        a["control_correct"], a["control_judge"] = bool(right), by


def screen(step: HumanStep, answers: list[dict[str, Any]], n_controls: int) -> dict[str, str]:
    """person → why excluded (MAIA App. A.3): a person counts only after answering at least the
    step's ``min_answered`` control questions (all ``n_controls`` of the queue when it holds fewer),
    with at least ``threshold`` of them right. Everyone who answered is screened: a person who never
    met a control is excluded too."""
    if step.control is None:
        return {}
    need = max(1, min(step.control.min_answered, n_controls))
    by: dict[str, dict[str, bool]] = {}
    for a in answers:  # a second pass saw the draft: screening counts first answers only
        if a["draft_mode"] == DraftMode.AFTER_COMMIT:
            continue
        mine = by.setdefault(a["person"], {})
        if a["control"] and a["control_correct"] is not None:  # one per control unit: their latest
            mine[a["unit_id"]] = bool(a["control_correct"])
    out = {}
    for person, hits in by.items():
        right = sum(hits.values())
        if len(hits) < need:
            out[person] = f"screening: met {len(hits)} of {need} control questions"
        elif right / len(hits) < step.control.threshold:
            out[person] = (
                f"screening: {right} of {len(hits)} controls correct "
                f"({right / len(hits):.0%} < {step.control.threshold:.0%})"
            )
    return out


def combine(step: HumanStep, answers: list[dict[str, Any]], llm: Mapping[str, Any]) -> dict[str, Any]:
    """Several people's values of one unit as one (choice: majority, a tie going to the LLM's choice
    when it is among the tied, else the first option; multi: chosen by at least half; rating: the
    mean; text, boxes, spans: the latest answer's)."""
    vals = [json.loads(a["values"]) for a in sorted(answers, key=lambda a: (a["created_at"] is None, a["created_at"]))]
    out: dict[str, Any] = {}
    for f in step.fields:
        got = [v.get(f.name) for v in vals if v.get(f.name) is not None]
        if not got:
            out[f.name] = None
        elif f.kind is FieldKind.CHOICE:
            counts = Counter(got)
            top = max(counts.values())
            tied = [o for o, _ in f.options if counts.get(o) == top]
            out[f.name] = llm.get(f.name) if llm.get(f.name) in tied else tied[0]
        elif f.kind is FieldKind.MULTI:
            counts = Counter(x for g in got for x in g)
            out[f.name] = [o for o, _ in f.options if counts.get(o, 0) * 2 >= len(got)]
        elif f.kind is FieldKind.RATING:
            out[f.name] = round(sum(got) / len(got), 4)
        else:
            out[f.name] = got[-1]
    return out


def keeps(step: HumanStep, values: Mapping[str, Any]) -> bool:
    """The paper's rule over the values: every threshold met, and the keep choice made."""
    for name, minimum in step.thresholds.items():
        v = values.get(name)
        if v is None or (isinstance(v, float) and math.isnan(v)) or float(v) < minimum:
            return False
    if step.keep_choice is not None:
        name, allowed = step.keep_choice
        return values.get(name) in allowed
    return True


def _changed(step: HumanStep, human: Mapping[str, Any], llm: Mapping[str, Any]) -> bool:
    for f in step.fields:
        h, m = human.get(f.name), llm.get(f.name)
        if f.kind is FieldKind.RATING and h is not None and m is not None:
            if abs(float(h) - float(m)) > 1e-9:
                return True
        elif h != m:
            return True
    return False


def _why_llm(in_sample: bool, refused: int, answered: bool) -> str:
    """Why a unit has no human result: not asked, only refused answers, only excluded people's, none."""
    if not in_sample:
        return "not_sampled"
    if refused:
        return "refused"
    return "excluded" if answered else "not_answered"


def _checked_second(first: list[dict[str, Any]], second: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Second-pass answers, refused where their author had not answered the unit first (they would
    have seen the draft before committing: not a second pass)."""
    first_at: dict[tuple[str, str], list[Any]] = {}
    for a in first:
        if not a["refused"]:
            first_at.setdefault((a["unit_id"], a["person"]), []).append(a["created_at"])
    for a in second:
        ts = first_at.get((a["unit_id"], a["person"]))
        ok = bool(ts) and (a["created_at"] is None or any(t is None or t <= a["created_at"] for t in ts))
        if not a["refused"] and not ok:
            a["refused"] = "second_pass: no_first_answer: the person had not answered this unit before seeing the draft"
            a["values"], a["agrees_llm"] = None, None
    return second


def _counted(step: HumanStep, answers: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """unit → the answers that count: neither refused nor excluded; a person's second pass in place
    of their first answer."""
    valid: dict[str, list[dict[str, Any]]] = {}
    for a in answers:
        if not a["refused"] and not a["excluded"]:
            valid.setdefault(a["unit_id"], []).append(a)
    for u, got in valid.items():
        revised = {a["person"] for a in got if a["draft_mode"] == DraftMode.AFTER_COMMIT}
        valid[u] = [a for a in got if a["draft_mode"] == DraftMode.AFTER_COMMIT or a["person"] not in revised]
    return valid


def _mode_of(mine: list[dict[str, Any]]) -> str:
    """The draft mode a unit's result was given under: the most-exposed of its answers."""
    modes = {a["draft_mode"] for a in mine}
    for m in (DraftMode.SUGGESTION, DraftMode.AFTER_COMMIT):
        if m in modes:
            return m.value
    return DraftMode.HIDDEN.value


def read(
    ls: LabelStudio,
    store: TableStore,
    spec: BenchmarkSpec,
    step: HumanStep,
    frame: pd.DataFrame,
    engine: Any = None,
) -> tuple[pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """(answers, results, figures) of the step: one row per annotation, one per unit of ``frame``;
    ``engine``: the LLM engine the step's control judge uses (None: its offline rule)."""
    step = configured(spec, step)
    ls.ensure_up()
    pid = ensure_project(ls, store, spec, step)
    rows = units(step, frame)
    first_mode = DraftMode.SUGGESTION if step.draft is DraftMode.SUGGESTION else DraftMode.HIDDEN
    answers, task_of = _answer_rows(ls, spec, step, pid, rows, first_mode)
    added = 0
    if step.draft is DraftMode.AFTER_COMMIT:
        pid2 = ensure_project(ls, store, spec, step, second=True)
        answers += _checked_second(answers, _answer_rows(ls, spec, step, pid2, rows, DraftMode.AFTER_COMMIT)[0])
        added = second_pass(ls, store, spec, step, rows, {a["unit_id"] for a in answers if not a["refused"]})
    judge_controls(spec, step, answers, engine)
    excluded = screen(step, answers, sum(1 for u in task_of if u in rows and is_control(spec, step, rows[u])))
    for a in answers:
        a["excluded"] = excluded.get(a["person"])
    valid = _counted(step, answers)
    refused = Counter(a["unit_id"] for a in answers if a["refused"])
    want = sampled(sorted(rows), step.sample)
    results = []
    for u, row in rows.items():
        llm = spec.hooks.step_llm_values(step.name, row)
        mine = valid.get(u, [])
        if mine:
            values, by, why = combine(step, mine, llm), "human", None
        else:
            values, by = llm, "llm"
            why = _why_llm(u in want, refused[u], any(a["unit_id"] == u for a in answers))
        results.append(
            {
                "benchmark": spec.name,
                "step": step.name,
                "corrects": step.corrects,
                "unit_id": u,
                "decided_by": by,
                "why_llm": why,
                "keep": keeps(step, values),
                "values": json.dumps(values),
                "llm_values": json.dumps(llm),
                "changed": _changed(step, values, llm) if by == "human" else None,
                "people": json.dumps(sorted({a["person"] for a in mine})) if mine else None,
                "n_answers": len(mine),
                "n_refused": int(refused[u]),
                "task_id": task_of.get(u),
                "draft_mode": _mode_of(mine) if mine else None,
            }
        )
    res = pd.DataFrame(results, columns=RESULT_COLUMNS)
    ans = pd.DataFrame(answers, columns=ANSWER_COLUMNS)
    return ans, res, {**figures(res, ans, excluded), "draft_mode": step.draft.value, "second_pass_tasks_added": added}


RESULT_COLUMNS = [
    "benchmark", "step", "corrects", "unit_id", "decided_by", "why_llm", "keep", "values", "llm_values",
    "changed", "people", "n_answers", "n_refused", "task_id", "draft_mode",
]  # fmt: skip
ANSWER_COLUMNS = [
    "benchmark", "step", "answer_id", "unit_id", "task_id", "person", "values", "refused", "control",
    "control_correct", "control_judge", "excluded", "seconds", "created_at", "draft_mode", "agrees_llm",
]  # fmt: skip


def figures(res: pd.DataFrame, ans: pd.DataFrame, excluded: Mapping[str, str]) -> dict[str, Any]:
    """What the card and the asset say of a step: how many units people decided, for how many the
    LLM's result was used (and why), changed drafts, refusals, exclusions."""
    human = res[res["decided_by"] == "human"]
    return {
        "units": len(res),
        "decided_by_human": len(human),
        "llm_result_used": int((res["decided_by"] == "llm").sum()),
        "llm_result_used_why": {str(k): int(v) for k, v in res["why_llm"].value_counts().items()},
        "human_changed_llm": int(human["changed"].fillna(False).astype(bool).sum()),
        "kept": int(res["keep"].sum()),
        "answers": len(ans),
        "answers_refused": int(ans["refused"].notna().sum()),
        "people": int(ans["person"].nunique()),
        "people_excluded": dict(excluded),
    }


# -- what the stage reads ------------------------------------------------------------------------------


def decisions(store: TableStore, spec: BenchmarkSpec, name: str) -> dict[str, dict[str, Any]]:
    """unit id → {decided_by, keep, values} of the step's last read; {} before any read (the stage
    then runs on the LLM's output alone, as before)."""
    step = step_of(spec, name)
    key = part(spec, step)
    if not store.exists(RESULTS) or key not in store.parts(RESULTS):
        return {}
    df = store.read(RESULTS, parts=[key])
    return {
        str(r["unit_id"]): {
            "decided_by": r["decided_by"],
            "keep": bool(r["keep"]),
            "values": json.loads(r["values"]),
            "draft_mode": r.get("draft_mode"),
        }
        for r in df.to_dict("records")
    }


def last(store: TableStore, table: str, key: str) -> pd.DataFrame:
    """The step's last read of ``table`` (empty before any)."""
    if store.exists(table) and key in store.parts(table):
        return store.read(table, parts=[key])
    return pd.DataFrame(columns=RESULT_COLUMNS if table == RESULTS else ANSWER_COLUMNS)


def exclusions(store: TableStore, spec: BenchmarkSpec, name: str) -> dict[str, str]:
    """person → why excluded from the step (control screening): pools and baselines leave them out."""
    step = step_of(spec, name)
    key = part(spec, step)
    if not store.exists(ANSWERS) or key not in store.parts(ANSWERS):
        return {}
    df = store.read(ANSWERS, parts=[key])
    df = df[df["excluded"].notna()]
    return dict(zip(df["person"], df["excluded"]))
