"""The human baseline: people answer the exported test items blind (no gold) in a second Label
Studio project per benchmark and export version; their answers are read as replies and scored by
the benchmark's own scorers (``forge/evals``), as model ``human`` with n and a bootstrap CI, the
way the papers report human performance (e.g. VAGUE §5.3, Table 2). Dagster-free.

The baseline is blind: a task carries only what the model under test sees (``items.blind_task_data``)
and an opaque key that ``review_tasks`` maps back to the item. Each item's earliest answer by
someone who did not see its gold is the reply; an answer by a reviewer of the item is kept in
``human_answers`` with ``excluded_reason`` and never scored (``human_answers`` > 1 collects more
answers per item; the extra ones are counted, not scored). Open-ended replies stay unscored: their
judge is an LLM, and a human baseline judged by a model is not what the papers report.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.review_spec import Media, ReviewPolicy, ReviewSpec
from forge.benchmarks.spec import BenchmarkSpec
from forge.evals import requests as rq
from forge.evals.config import ModelSpec, Setting, benchmark_block, load_eval_config, settings_for
from forge.evals.pipeline import load_export, prompt_files
from forge.evals.scoring import Scorer, score_benchmark
from forge.labelstudio.client import LabelStudio
from forge.llm.prompts import load_prompt
from forge.llm.types import LLMResult
from forge.review import sync
from forge.review.items import as_list, blind_task_data, box_answer, human_key_of, revision
from forge.review.labelconfig import BOX_LABEL, LETTERS, human_config
from forge.review.stages import StageOut, clip_paths, project_settings, read, settings
from forge.review.verdicts import who
from forge.storage import TableStore

MODEL = "human"
BLIND_DIR = "review/blind"  # under the data dir: media of the blind tasks, under names that say nothing
HUMAN = ModelSpec(name=MODEL, model=MODEL, backend=MODEL, accepts="frames", max_frames=64)


def part(name: str) -> str:
    """The ``review_tasks`` file of a benchmark's human-baseline tasks."""
    return f"{name}__human"


def test_items(store: TableStore, spec: BenchmarkSpec) -> tuple[pd.DataFrame, str]:
    """The latest export's evaluated split, media paths relative to the data dir."""
    split = benchmark_block(load_eval_config(), spec)["split"]
    pub = load_export(store.data_dir / "exports", spec.name)
    items = pub.items
    if items.empty:
        return items, pub.version
    items = items[items["split"] == split].reset_index(drop=True)
    root = store.data_dir.resolve()
    items["media_paths"] = [[str(Path(p).resolve().relative_to(root)) for p in ps] for ps in items["media_paths"]]
    return items, pub.version


def blind_media(data_dir: Path, benchmark: str, name: str, rel: str | None) -> str | None:
    """The file at ``rel`` (data-dir relative) under a name that says nothing about the item
    (``review/blind/<benchmark>/<name><suffix>``, a hard link where the file system allows, else a
    copy): an exported path names the split and the source file. None when there is no file."""
    if not rel or not (data_dir / rel).is_file():
        return None
    out = f"{BLIND_DIR}/{benchmark}/{name}{Path(rel).suffix}"
    dst = data_dir / out
    if not dst.is_file():
        dst.parent.mkdir(parents=True, exist_ok=True)
        tmp = dst.with_name(dst.name + ".tmp")
        tmp.unlink(missing_ok=True)
        try:
            os.link(data_dir / rel, tmp)
        except OSError:
            shutil.copyfile(data_dir / rel, tmp)
        tmp.replace(dst)
    return out


def _wanted(store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, items: pd.DataFrame) -> dict[str, sync.Wanted]:
    """Blind tasks keyed by their opaque key (``items.human_key``), media under blind names."""
    root = store.data_dir.resolve()
    clips = clip_paths(store)
    out = {}
    for it in items.to_dict("records"):
        key = human_key_of(spec.name, str(it["item_id"]), revision(it))
        media = as_list(it.get("media_paths")) or []
        image = blind_media(root, spec.name, key, media[0]) if media else None
        clip = clips.get(str(it.get("unit_id"))) if rs.media == Media.VIDEO else None
        video = blind_media(root, spec.name, f"{key}-clip", clip)
        out[key] = sync.Wanted(blind_task_data(it, rs, key, image, video))
    return out


def run_human_tasks(store: TableStore, spec: BenchmarkSpec, ls: LabelStudio | None, note: str = "") -> StageOut:
    """Push the latest export's test items, blind; ``ls`` None (tool down, policy advisory): the
    recorded tasks stay, with ``note``. The tool's tasks carry only an opaque key; the rows of
    ``review_tasks`` (file ``<b>__human``) map each task back to its item and revision."""
    rs = settings(spec)
    items, version = test_items(store, spec)
    prev = read(store, "review_tasks", part(spec.name))
    prev = prev if len(prev) else pd.DataFrame(columns=sync.TASK_COLUMNS)
    out = StageOut(metadata={"export_version": version or "none", "items": len(items)})
    if items.empty or ls is None or rs.policy == ReviewPolicy.OFF:
        out.metadata["note"] = note or (
            f"review policy off for {spec.name}"
            if rs.policy == ReviewPolicy.OFF
            else f"no exported {spec.name} test items yet: materialize `{spec.name}_export` first"
        )
        out.tables["review_tasks"] = prev
        return out
    ls.ensure_up()
    max_opts = max([len(as_list(o) or []) for o in items["options"]] + [2])
    title = f"{spec.title} human baseline · {spec.name} {version}"
    desc = f"Answer each {spec.title} item as you understand it (no gold shown); scored like a model."
    project = ls.ensure_project(title, human_config(rs, max_opts), **project_settings(rs, rs.human_answers, desc))
    wanted = _wanted(store, spec, rs, items)
    blind = store.data_dir.resolve() / BLIND_DIR / spec.name
    blind.mkdir(parents=True, exist_ok=True)  # Label Studio refuses a storage on a missing folder
    ls.ensure_local_storage(int(project["id"]), str(blind))
    # the push matches tasks by the key they carry; the table keeps item id and revision
    real = {
        human_key_of(spec.name, str(it["item_id"]), revision(it)): (str(it["item_id"]), revision(it))
        for it in items.to_dict("records")
    }
    for r in prev.itertuples():
        real.setdefault(human_key_of(spec.name, str(r.item_id), str(r.revision)), (str(r.item_id), str(r.revision)))
    keyed = prev.copy()
    if len(keyed):
        keys = [human_key_of(spec.name, str(r.item_id), str(r.revision)) for r in prev.itertuples()]
        keyed["item_id"], keyed["revision"] = keys, keys
    rows, counts = sync.push(ls, spec.name, "human", project, wanted, keyed, set())
    known = rows["item_id"].isin(list(real))  # a task pushed before keys (item id in its data) stays as it is
    rows.loc[known, "revision"] = [real[k][1] for k in rows.loc[known, "item_id"]]
    rows.loc[known, "item_id"] = [real[k][0] for k in rows.loc[known, "item_id"]]
    out.tables["review_tasks"] = rows
    out.metadata["pushed"] = counts
    return out


def reply_of(annotation: dict[str, Any], kind: str, options: list[str]) -> str:
    """A submitted answer as the reply text the benchmark's reader parses (a drawn box as
    ``region: [top, left, height, width]``, the box answer format)."""
    letters, text, box = [], "", ""
    for r in annotation.get("result") or []:
        if r.get("from_name") == "choice":
            letters = [str(c) for c in (r.get("value") or {}).get("choices") or []]
        elif r.get("from_name") == "answer_text":
            t = (r.get("value") or {}).get("text") or []
            text = "\n".join(t if isinstance(t, list) else [str(t)]).strip()
        elif r.get("from_name") == "box" and not box:
            v = r.get("value") or {}
            box = box_answer(BOX_LABEL, [float(v.get(k, 0)) / 100 for k in ("y", "x", "height", "width")])
    if letters and kind == "yesno":  # read by option text (Yes / No), not by letter
        return ", ".join(options[LETTERS.index(x)] for x in letters if LETTERS.index(x) < len(options))
    if letters and kind in ("mcq", "multi"):
        return ", ".join(sorted(letters))
    return text or box or ", ".join(letters)


def answers(ls: LabelStudio, task_rows: pd.DataFrame, users: dict[int, str]) -> list[dict[str, Any]]:
    """Every submitted answer of the recorded blind tasks, oldest first, mapped back to its item
    through ``task_rows`` (the tasks themselves carry only an opaque key)."""
    by_kind, _ = sync.poll(ls, task_rows, ("human",))
    item_of = {int(r.task_id): str(r.item_id) for r in task_rows.itertuples()}
    out = []
    for pid, tasks in by_kind["human"]:
        for t in tasks:
            item = item_of.get(int(t["id"]))
            for a in t.get("annotations") or []:
                if item is None or a.get("was_cancelled"):
                    continue
                # the person is whoever last changed the answer (the request's user, as for verdicts);
                # an answer changed by someone other than its author is not scored
                person, _author, flag = who(a, users)
                out.append(
                    {
                        "answer_id": f"{pid}:{a['id']}",
                        "item_id": item,
                        "task_id": int(t["id"]),
                        "person": person,
                        "flag": flag,
                        "annotation": a,
                        "seconds": float(a["lead_time"]) if a.get("lead_time") is not None else None,
                        "created_at": pd.Timestamp(a["created_at"]).tz_convert("UTC") if a.get("created_at") else None,
                    }
                )
    return sorted(out, key=lambda r: (str(r["created_at"]), r["answer_id"]))


def saw_gold(
    store: TableStore, spec: BenchmarkSpec, ls: LabelStudio, users: dict[int, str]
) -> dict[tuple[str, str], str]:
    """(item id, person) → how that person saw the item's gold: a verdict on it in ``verdicts``
    (any revision, stale or not), or an annotation in a live review, adjudication or returned task
    not yet read back. Label Studio's community edition shows every project to every member of the
    organisation (no workspaces or project membership), so this is where the baseline stays blind."""
    out: dict[tuple[str, str], str] = {}
    v = read(store, "verdicts", spec.name)
    for r in v.to_dict("records") if len(v) else []:
        why = f"saw_gold: {r['project_kind']} verdict {r['verdict_id']} on the item"
        for person in (r.get("reviewer"), r.get("author")):  # whoever made or changed it saw the form
            if isinstance(person, str) and person:
                out.setdefault((str(r["item_id"]), person), why)
    tasks = read(store, "review_tasks", spec.name)
    by_kind, _ = sync.poll(ls, tasks, ("review", "adjudication", "returned"))
    for kind, projects in by_kind.items():
        for pid, ts in projects:
            for t in ts:
                for a in t.get("annotations") or []:
                    changer, author, _flag = who(a, users)
                    for person in {changer, author} - {None}:
                        key = (str((t.get("data") or {}).get("item_id")), person)
                        out.setdefault(key, f"saw_gold: {kind} annotation {pid}:{a['id']} on the item")
    return out


def pick(found: list[dict[str, Any]], seen: dict[tuple[str, str], str]) -> list[dict[str, Any]]:
    """Each answer with ``used`` / ``excluded_reason``: per item the earliest answer by someone who
    did not see its gold is scored; the others are kept and say why not."""
    used: set[str] = set()
    for r in found:
        why = r.get("flag") or seen.get((r["item_id"], r["person"]))
        r["used"] = why is None and r["item_id"] not in used
        r["excluded_reason"] = why if why else (None if r["used"] else "later_answer: an earlier answer is scored")
        if r["used"]:
            used.add(r["item_id"])
    return found


def visual_setting(spec: BenchmarkSpec, cfg: dict[str, Any]) -> Setting:
    """The setting people answer in: the media they see (most frames), zero-shot."""
    pool = [
        s for s in settings_for(cfg, spec) if s.input in ("frames", "image") and not s.shots and not s.variant
    ] or list(settings_for(cfg, spec))
    return max(pool, key=lambda s: (s.input == "frames", s.frames))


ANSWER_COLUMNS = [
    "benchmark",
    "export_version",
    "answer_id",
    "item_id",
    "task_id",
    "person",
    "reply",
    "used",
    "excluded_reason",
    "seconds",
    "created_at",
]


def score(
    store: TableStore, spec: BenchmarkSpec, ls: LabelStudio
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, dict[str, Any]]:
    """(eval_predictions rows, eval_scores rows, human_answers rows, metadata) of model ``human``.
    An answer by someone who saw the item's gold is never scored (``saw_gold``)."""
    tasks = read(store, "review_tasks", part(spec.name))
    items, version = test_items(store, spec)
    none = pd.DataFrame(columns=ANSWER_COLUMNS)
    if not len(tasks) or items.empty:
        return pd.DataFrame(), pd.DataFrame(), none, {"note": "no human-baseline tasks yet", "answered": 0}
    ls.ensure_up()
    users = ls.users()
    found = pick(answers(ls, tasks, users), saw_gold(store, spec, ls, users))
    first = {r["item_id"]: r["annotation"] for r in found if r["used"]}
    cfg = load_eval_config()
    setting = visual_setting(spec, cfg)
    answered = items[items["item_id"].astype(str).isin(first)].to_dict("records")
    prompts = {p.name: load_prompt(p) for p in prompt_files(spec, cfg)}  # as forge.evals.pipeline.evaluate
    for task, fname in (benchmark_block(cfg, spec).get("prompts") or {}).items():
        prompts[f"task:{task}"] = prompts[fname]
    reqs, skipped = rq.build_requests(spec, setting, answered, prompts, HUMAN, store.data_dir)
    kind_of = {str(er.item["item_id"]): (er.kind, list(er.options or [])) for er in reqs}
    results = []
    for er in reqs:
        reply = reply_of(first[str(er.item["item_id"])], er.kind, list(er.options or []))
        results.append(
            LLMResult(er.request.item_id, True, {"text": reply}, reply, None, None, "human", "", MODEL, MODEL, False, 1)
        )
    table = pd.DataFrame(
        [
            {
                **{k: r[k] for k in ANSWER_COLUMNS if k in r},
                "benchmark": spec.name,
                "export_version": version,
                "reply": reply_of(r["annotation"], *kind_of.get(r["item_id"], ("", []))),
            }
            for r in found
        ],
        columns=ANSWER_COLUMNS,
    )
    excluded = table[table["excluded_reason"].fillna("").str.startswith("saw_gold")]
    md = {
        "setting": setting.name,
        "answered": len(first),
        "answers": len(found),
        "excluded_saw_gold": len(excluded),
        "excluded_people": sorted(excluded["person"].unique().tolist()),
        "items": len(items),
        "skipped": len(skipped),
    }
    scoring = dict(benchmark_block(cfg, spec).get("scoring") or {})
    split_of = {str(r["item_id"]): str(r.get("split") or "test") for r in answered}
    preds = pd.DataFrame(rq.prediction_rows(MODEL, spec, setting, split_of, reqs, results, scoring))
    if preds.empty:
        return preds, pd.DataFrame(), table, md
    for_scores = preds.copy()
    preds["detail"] = preds["detail"].map(lambda d: json.dumps(d, ensure_ascii=False, default=str))
    b = cfg.get("bootstrap") or {}
    sc = Scorer(int(b.get("n", 1000)), int(b.get("seed", 0)), float(b.get("alpha", 0.05)))
    scores = pd.DataFrame(score_benchmark(spec, for_scores, items, sc, scoring))
    if len(scores):
        scores.insert(0, "model", MODEL)
        scores.insert(1, "benchmark", spec.name)
        scores["split"] = setting_split(split_of)
        scores["backend"] = MODEL
    for frame in (preds, scores):
        if len(frame):
            frame["export_version"] = version
    return preds, scores, table, md


def setting_split(split_of: dict[str, str]) -> str:
    return next(iter(set(split_of.values())), "test")
