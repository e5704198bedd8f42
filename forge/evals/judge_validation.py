"""The judge checked against people, as MAIA validates its GPT-4o judge (§4.2: 100 samples rated by
two people and the judge, Fleiss' kappa 0.82). Dagster-free.

* ``run_judge_tasks``: a seeded sample of the models' judged open-ended answers becomes tasks of one
  Label Studio project per benchmark (``<title> judge validation · <name>``, overlap = the raters):
  each shows what the judge was shown (its prompt's instruction and variables: question, answer,
  references) and asks for the judge's own verdict, with the judge's labels (the enum of its
  schema's ``field``). Neither the judge's verdict nor the model's name is shown; a task carries
  an opaque key (a hash of model, setting and item) that ``sample_frame`` maps back.
* ``read_ratings``: every annotation back (table ``judge_ratings``, one row per annotation; an
  empty, unknown or double choice is refused with its reason, one changed by someone else is
  flagged), re-read whole, never duplicated.
* ``agreement``: Fleiss' kappa between the people, Fleiss' kappa of the people and the judge as
  raters together (MAIA's figure), and each person's Cohen's kappa with the judge
  (``forge.people.agreement``: statsmodels, scikit-learn), over the sampled answers rated by
  ``raters`` people (table ``judge_agreement``; the card and the eval report show it).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any
from xml.sax.saxutils import escape, quoteattr

import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec
from forge.evals.config import benchmark_block
from forge.evals.per_person import PREFIX
from forge.evals.scoring import reference_variables
from forge.items.cells import as_object
from forge.llm.prompts import Prompt, load_prompt
from forge.people import agreement as ag
from forge.people import identity as ident
from forge.people import project
from forge.people.client import LabelStudio
from forge.people.push import Wanted, add_new
from forge.people.read import lead_time, who
from forge.people.refusal import control_problem, skipped
from forge.people.sample import subset

CONTROL = "verdict"  # the form's choice control
CONTROLS = {CONTROL: ("choices", "instruction")}  # the form's one control: a choice about the instruction
RATING_COLUMNS = [
    "benchmark",
    "answer_id",
    "sample_key",
    "model",
    "setting",
    "item_id",
    "task_id",
    "person",
    "label",
    "judge_label",
    "refused",
    "seconds",
    "created_at",
]
AGREEMENT_COLUMNS = ["benchmark", "measure", "person", "value", "units", "raters", "labels", "judge_model", "note"]


def settings(spec: BenchmarkSpec, cfg: dict[str, Any]) -> dict[str, Any]:
    """``judge_validation:`` of the paper's evals.yaml: ``field`` (the judge's verdict field),
    ``sample`` (answers, MAIA 100), ``raters`` (people per answer, MAIA 2), ``seed``."""
    raw = dict(benchmark_block(cfg, spec).get("judge_validation") or {})
    unknown = set(raw) - {"field", "sample", "raters", "seed"}
    if unknown:
        raise ValueError(f"{spec.name}: unknown judge_validation settings {sorted(unknown)}")
    out = {"field": str(raw.get("field", "label")), "sample": raw.get("sample", 100), "seed": raw.get("seed", 0)}
    out["raters"] = int(raw.get("raters", 2))
    if out["raters"] < 2:
        raise ValueError(f"{spec.name}: judge_validation.raters must be at least 2 (agreement needs two people)")
    return out


def judge_prompt(spec: BenchmarkSpec) -> Prompt:
    if not spec.eval.judge_prompt:
        raise ValueError(f"{spec.name} has no judge (EvalSpec.judge_prompt)")
    return load_prompt(spec.eval.prompts_dir / spec.eval.judge_prompt)


def labels(prompt: Prompt, field: str) -> list[str]:
    """The judge's labels: the enum of its schema's ``field``, as the judge gives them."""
    prop = ((prompt.schema or {}).get("properties") or {}).get(field) or {}
    if not prop.get("enum"):
        raise ValueError(f"judge prompt {prompt.name}: schema field {field!r} has no enum of labels")
    return [str(v) for v in prop["enum"]]


def instruction(prompt: Prompt) -> str:
    """What the judge is told before the inputs: the prompt's text up to its first variable."""
    text = "\n".join(t for t in (prompt.system, prompt.user) if t)
    return re.split(r"\{\{", text, maxsplit=1)[0].strip()


def sample_key(model: str, setting: str, item_id: str) -> str:
    return hashlib.sha256(f"judge|{model}|{setting}|{item_id}".encode()).hexdigest()[:16]


def sample_frame(preds: pd.DataFrame, field: str, size: int | None, seed: int | str) -> pd.DataFrame:
    """The models' judged open-ended answers (a verdict in ``judge_json[field]``; people's own
    baselines left out), keyed, and the seeded sample of ``size`` of them."""
    if preds.empty:
        return preds.assign(sample_key=[], judge_label=[])
    p = preds[(preds["task"] == "open_ended") & preds["judge_ok"].fillna(False).astype(bool)]
    p = p[~p["model"].astype(str).str.startswith(PREFIX) & (p["variant"] == 0)].copy()
    p["judge_label"] = [as_object(j).get(field) for j in p["judge_json"]]
    p = p[p["judge_label"].notna()]
    p["judge_label"] = p["judge_label"].astype(str)
    p["sample_key"] = [sample_key(m, s, i) for m, s, i in zip(p["model"], p["setting"], p["item_id"], strict=True)]
    keep = set(subset(p["sample_key"], size, seed))
    return p[p["sample_key"].isin(keep)].sort_values("sample_key").reset_index(drop=True)


def label_config(variables: list[str], choices: list[str]) -> str:
    """The form: the judge's instruction, each of its inputs, and one required choice of its labels."""
    parts = [
        "<View>",
        '  <Header value="What the judge is asked"/>',
        '  <Text name="instruction" value="$instruction"/>',
    ]
    for v in variables:
        parts += [f"  <Header value={quoteattr(v)}/>", f'  <Text name="in_{escape(v)}" value="$in_{escape(v)}"/>']
    parts.append('  <Header value="Your verdict, as the judge would give it"/>')
    parts.append(f'  <Choices name="{CONTROL}" toName="instruction" choice="single-radio" required="true">')
    parts += [f"    <Choice value={quoteattr(c)}/>" for c in choices]
    parts += ["  </Choices>", "</View>"]
    return "\n".join(parts)


def title(spec: BenchmarkSpec) -> str:
    return f"{spec.title} judge validation · {spec.name}"


def run_judge_tasks(
    ls: LabelStudio, spec: BenchmarkSpec, preds: pd.DataFrame, items: pd.DataFrame, cfg: dict[str, Any]
) -> dict[str, Any]:
    """Tasks for the sampled answers that have none yet (a re-push adds only new ones)."""
    s = settings(spec, cfg)
    prompt = judge_prompt(spec)
    choices = labels(prompt, s["field"])
    sample = sample_frame(preds, s["field"], s["sample"], s["seed"])
    if sample.empty:
        return {"sampled": 0, "pushed": 0, "note": f"no judged open-ended {spec.name} answers yet: evaluate a model"}
    by_id = {str(r["item_id"]): r for r in items.to_dict("records")}
    ls.ensure_up()
    desc = f"Give the verdict {spec.title}'s LLM judge gives ({', '.join(choices)}); the judge's own is not shown."
    config = label_config(list(prompt.variables), choices)
    pid = int(project.ensure(ls, title(spec), config, project.settings(s["raters"], desc, predictions=False))["id"])
    own = ident.Owner(ls, pid, spec.name, "judge", "sample_key")  # only its own tasks count (identity.py)
    wanted = {}
    for r in sample.to_dict("records"):
        if str(r["item_id"]) not in by_id:
            continue
        row, item = {**r, "detail": as_object(r.get("detail"))}, by_id[str(r["item_id"])]
        v = spec.hooks.judge_variables(row, item) or reference_variables(row, item)  # None: the shared inputs
        data = {"sample_key": r["sample_key"], "instruction": instruction(prompt)}
        data |= {f"in_{k}": str(v.get(k, "")) for k in prompt.variables}
        wanted[str(r["sample_key"])] = Wanted(data)
    pushed = len(add_new(own, wanted))
    out = {"project_id": pid, "sampled": len(sample), "pushed": pushed, "already_there": len(sample) - pushed}
    return out | ({"not_ours": own.others} if own.others else {})


def read_ratings(ls: LabelStudio, spec: BenchmarkSpec, preds: pd.DataFrame, cfg: dict[str, Any]) -> pd.DataFrame:
    """Every annotation of the project, one row each, mapped back to its answer and the judge's label."""
    s = settings(spec, cfg)
    choices = labels(judge_prompt(spec), s["field"])
    project = ls.project_by_title(title(spec))
    if project is None:
        return pd.DataFrame(columns=RATING_COLUMNS)
    keyed = sample_frame(preds, s["field"], None, s["seed"]).set_index("sample_key")
    users = ls.users()
    rows = []
    for t in ident.Owner(ls, int(project["id"]), spec.name, "judge", "sample_key").tasks():
        key = str((t.get("data") or {}).get("sample_key"))
        ref = keyed.loc[key] if key in keyed.index else None
        for a in t.get("annotations") or []:  # the task list carries them: one request per page, not per task
            person, _author, flag = who(a, users)
            label, refused = read_label(a.get("result") or [], choices)
            if a.get("was_cancelled"):  # a skip gives no rating: recorded with why, never counted
                label, refused = None, skipped("rating")
            rows.append(
                {
                    "benchmark": spec.name,
                    "answer_id": f"{project['id']}:{a['id']}",
                    "sample_key": key,
                    "model": None if ref is None else str(ref["model"]),
                    "setting": None if ref is None else str(ref["setting"]),
                    "item_id": None if ref is None else str(ref["item_id"]),
                    "task_id": int(t["id"]),
                    "person": person,
                    "label": label,
                    "judge_label": None if ref is None else str(ref["judge_label"]),
                    "refused": flag
                    or refused
                    or (None if ref is not None else "unknown_answer: not in eval_predictions"),
                    "seconds": lead_time(a),
                    "created_at": pd.Timestamp(a["created_at"]) if a.get("created_at") else None,
                }
            )
    return pd.DataFrame(rows, columns=RATING_COLUMNS)


def read_label(result: list[dict[str, Any]], choices: list[str]) -> tuple[str | None, str | None]:
    """(label, None) or (None, why refused): exactly one of the judge's labels, from the form's one
    control about the instruction (any other control or object is refused, never ignored)."""
    why = control_problem(result, CONTROLS)
    if why:
        return None, why
    picked = [c for r in result if r.get("from_name") == CONTROL for c in (r.get("value") or {}).get("choices") or []]
    if not picked:
        return None, "empty_answer: no verdict chosen"
    if len(picked) > 1:
        return None, f"several_choices: {picked}"
    if picked[0] not in choices:
        return None, f"unknown_choice: {picked[0]!r} is not one of {choices}"
    return picked[0], None


def units(ratings: pd.DataFrame, raters: int) -> pd.DataFrame:
    """Answers × rating slots: the earliest valid rating of each person, answers with at least
    ``raters`` people, their first ``raters`` ratings (Fleiss' kappa takes any people per answer,
    the same number of them)."""
    ok = ratings[ratings["refused"].isna() & ratings["label"].notna()]
    ok = ok.sort_values(["created_at", "answer_id"]).drop_duplicates(["sample_key", "person"], keep="first")
    counts = ok.groupby("sample_key")["person"].transform("size")
    ok = ok[counts >= raters]
    return ok.groupby("sample_key", sort=True).head(raters)


JUDGE = "(the judge)"  # the judge as a rater beside the people (no person's e-mail has a space)


def agreement(ratings: pd.DataFrame, choices: list[str], raters: int) -> dict[str, Any]:
    """{units, people, fleiss_people, fleiss_people_and_judge, cohen: {person: {kappa, units}}}, measured
    by forge.people.agreement (statsmodels' Fleiss, scikit-learn's Cohen)."""
    u = units(ratings, raters)
    out: dict[str, Any] = {"units": int(u["sample_key"].nunique()), "raters": raters, "labels": choices}
    if out["units"] < 2:
        return out | {"note": f"fewer than two answers rated by {raters} people", "cohen": {}}
    people = ag.long_rows(u, "sample_key", "person", "label")[ag.COLUMNS]
    out["fleiss_people"] = ag.fleiss(people).kappa
    out["fleiss_people_and_judge"] = ag.fleiss(pd.concat([people, _judge_rows(u)])).kappa
    valid = ratings[ratings["refused"].isna() & ratings["label"].notna()]
    valid = valid.sort_values(["created_at", "answer_id"]).drop_duplicates(["sample_key", "person"], keep="first")
    rows = pd.concat([ag.long_rows(valid, "sample_key", "person", "label")[ag.COLUMNS], _judge_rows(valid)])
    out["cohen"] = {}
    for p in sorted(valid["person"].astype(str).unique()):
        c = ag.cohen(rows, p, JUDGE, choices)
        out["cohen"][p] = {"kappa": c.kappa, "units": c.units}
    out["people"] = sorted(out["cohen"])
    return out


def _judge_rows(ratings: pd.DataFrame) -> pd.DataFrame:
    """The judge's label of each rated answer, as agreement rows of the rater ``JUDGE``."""
    j = ratings.drop_duplicates("sample_key")
    return pd.DataFrame({"unit": j["sample_key"], "person": JUDGE, "value": j["judge_label"]}, columns=ag.COLUMNS)


def agreement_rows(spec: BenchmarkSpec, fig: dict[str, Any], judge_model: str | None) -> pd.DataFrame:
    """The figures as ``judge_agreement`` rows: one per measure (and per person for Cohen's kappa)."""
    base = {
        "benchmark": spec.name,
        "units": fig["units"],
        "raters": fig["raters"],
        "labels": ", ".join(fig["labels"]),
        "judge_model": judge_model,
        "note": fig.get("note"),
    }
    rows = [
        {**base, "measure": m, "person": None, "value": fig.get(m)}
        for m in ("fleiss_people", "fleiss_people_and_judge")
    ]
    rows += [
        {**base, "measure": "cohen_person_vs_judge", "person": p, "value": c["kappa"], "units": c["units"]}
        for p, c in fig.get("cohen", {}).items()
    ]
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)
