"""The human baseline: people answer the exported test items blind (no gold) in a second Label
Studio project per benchmark and export version; each person's answers are read as replies and
scored on their own by the benchmark's own scorers (``forge/evals``), open-ended ones by its judge,
the way the papers report human performance: per annotator with n and a CI, their average and their
best (II-Bench Table 3: Human_avg, Human_best; ``forge/evals/per_person.py``). The leaderboard shows
models ``human (avg)`` and ``human (best)``; ``human_scores`` holds each person's rows. The run
covers a declared subset of the test items (``human.subset`` in the paper's evals.yaml; VAGUE §5.3:
400), drawn by seed. Dagster-free.

The baseline is blind: its tasks live on a Label Studio instance of their own (``make review``
starts it beside the review one; ``forge.people.blind_room``), whose accounts cannot reach a
review project or its gold. A task carries only what the model under test sees
(``items.blind_task_data``) and an opaque key (a keyed hash under the data dir's secret) that only
``review_tasks`` maps back to the item; its media are re-encoded under such keys
(``blind_media``), so neither its ids nor its files' bytes match a review task. A person's
earliest answer to an item is scored in that person's baseline; an answer by someone who saw the
item's gold (a reviewer of it, known by e-mail on both instances), an empty one, one changed by
someone else, one outside the subset, or one by an annotator the control questions excluded is
kept in ``human_answers`` with ``excluded_reason`` and never scored.
"""

from __future__ import annotations

import functools
import json
import os
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.review_spec import Media, ReviewPolicy, ReviewSpec
from forge.benchmarks.spec import BenchmarkSpec
from forge.checks import text_rules
from forge.evals import requests as rq
from forge.evals.blind_media import BlindMediaError, reencode, suffix_for
from forge.evals.config import ModelSpec, Setting, benchmark_block, load_eval_config, settings_for
from forge.evals.per_person import baseline_frames, items_of, person_model, score_person
from forge.evals.pipeline import judge_rows, load_export, prompt_files
from forge.evals.scoring import unparseable_open_ended
from forge.items.cells import as_list
from forge.llm.prompts import load_prompt
from forge.llm.types import LLMResult
from forge.people import project
from forge.people.blind_room import blind_key
from forge.people.client import LabelStudio
from forge.people.links import BLIND_MEDIA
from forge.people.push import TASK_COLUMNS, Wanted, push
from forge.people.read import lead_time, poll, who
from forge.people.refusal import control_problem, skipped
from forge.people.sample import subset
from forge.review.items import blind_task_data, box_answer, revision
from forge.review.labelconfig import BOX_LABEL, LETTERS, human_config
from forge.review.stages import clip_paths, read
from forge.storage import TableStore, objects
from forge.storage.result import StageResult

MODEL = "human"
BLIND_DIR = BLIND_MEDIA  # under the data dir: the blind instance's document root (its media only)
BLIND_TITLE = "blind baseline"  # in every blind project's title; older human projects lived on the review instance
HUMAN = ModelSpec(name=MODEL, model=MODEL, backend=MODEL, accepts="frames", max_frames=64)


def part(spec: BenchmarkSpec) -> str:
    """The ``review_tasks`` file of a benchmark's human-baseline tasks."""
    return f"{spec.name}__human"


def test_items(store: TableStore, spec: BenchmarkSpec) -> tuple[pd.DataFrame, str]:
    """The latest export's evaluated split, media paths relative to the data dir."""
    split = benchmark_block(load_eval_config(), spec)["split"]
    pub = load_export(store.data_dir / "exports", spec)
    items = pub.items
    if items.empty:
        return items, pub.version
    items = items[items["split"] == split].reset_index(drop=True)
    root = store.data_dir.resolve()
    resolved = functools.cache(lambda p: str(Path(p).resolve().relative_to(root)))  # items share media
    items["media_paths"] = [[resolved(p) for p in ps] for ps in items["media_paths"]]
    return items, pub.version


def task_key(data_dir: Path, spec: BenchmarkSpec, item_id: str, rev: str) -> str:
    """The blind task's key: stable for one revision (a re-push keeps the task), computable only
    with the data dir's secret (``blind_room.blind_key``); ``review_tasks`` maps it back."""
    return blind_key(data_dir, "task", spec.name, item_id, rev)


def blind_folder(data_dir: Path, spec: BenchmarkSpec) -> Path:
    """``review/blind/<benchmark>`` under ``data_dir``, made private (0700, and ``review/blind``
    too): the blind material is people's, readable by this user (and the Label Studio it starts) only."""
    top = Path(data_dir) / BLIND_DIR
    for d in (top, top / spec.name):
        d.mkdir(parents=True, exist_ok=True)
        os.chmod(d, 0o700)
    return top / spec.name


def blind_media(store: TableStore, spec: BenchmarkSpec, name: str, rel: str | None) -> str | None:
    """The file at ``rel`` (data-location relative) re-encoded under a name that says nothing about
    the item (``review/blind/<benchmark>/<name><suffix>``, ``blind_media.reencode``, 0600 in a 0700
    folder): its path relative to the blind instance's document root. None when there is no file;
    ``BlindMediaError`` when it cannot be re-encoded. On object storage the source is fetched from
    the bucket when this machine lacks it, and the copy is put to the bucket under the same blind
    key, once (a copy any machine put there before is kept): never under a content key, which
    would equal the gold file's for the same bytes."""
    if not rel:
        return None
    data_dir = store.data_dir.resolve()
    out = f"{spec.name}/{blind_key(data_dir, 'media', name)}{suffix_for(Path(rel))}"
    key = f"{BLIND_DIR}/{out}"
    if store.remote is not None and store.remote.exists(key):
        return out
    src = data_dir / rel
    if not src.is_file() and store.remote is not None and store.remote.exists(rel):
        objects.fetch(store, rel)
    if not src.is_file():
        return None
    dst = data_dir / key
    blind_folder(data_dir, spec)
    # made before: kept, unless it is the source itself (a hard link an older version made)
    if dst.is_file() and not dst.is_symlink() and not dst.samefile(src):
        os.chmod(dst, 0o600)  # one an older version left readable to all
    else:
        reencode(src, dst)
    if store.remote is not None:
        store.remote.put_once(key, dst.read_bytes())
    return out


def _wanted(
    store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, items: pd.DataFrame
) -> tuple[dict[str, Wanted], dict[str, str]]:
    """Blind tasks keyed by their opaque key, media re-encoded under blind names; and item id →
    why it has no task (its media could not be re-encoded: the other items still go)."""
    root = store.data_dir.resolve()
    clips = clip_paths(store)
    out, refused = {}, {}
    for it in items.to_dict("records"):
        key = task_key(root, spec, str(it["item_id"]), revision(it))
        media = as_list(it.get("media_paths")) or []
        clip = clips.get(str(it.get("unit_id"))) if rs.media == Media.VIDEO else None
        try:
            image = blind_media(store, spec, key, media[0]) if media else None
            video = blind_media(store, spec, f"{key}-clip", clip)
        except BlindMediaError as exc:
            refused[str(it["item_id"])] = f"blind_media: {exc}"
            continue
        out[key] = Wanted(blind_task_data(it, rs, key, image, video))
    return out, refused


def blind_tasks(
    store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, items: pd.DataFrame
) -> tuple[dict[str, Wanted], dict[str, str]]:
    """The blind tasks as they are pushed: in key order (a task's id says nothing of its item),
    their media the blind copies as the blind instance serves them (on object storage, pre-signed
    URLs of the copies' objects: ``project.served``, below ``review/blind/<benchmark>`` only, never
    the gold's media); and item id → why it has no task."""
    wanted, refused = _wanted(store, spec, rs, items)
    wanted = dict(sorted(wanted.items()))
    return project.served(store, wanted, root=BLIND_DIR, within=f"{BLIND_DIR}/{spec.name}"), refused


def blind_rows(rows: pd.DataFrame) -> pd.DataFrame:
    """The ``review_tasks`` rows of tasks on the blind instance (an older version pushed the
    baseline to the review instance: those rows name projects there, never polled here)."""
    if not len(rows):
        return rows
    return rows[rows["project_title"].astype(str).str.contains(BLIND_TITLE, regex=False)]


def run_human_tasks(
    store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, ls: LabelStudio | None, note: str = ""
) -> StageResult:
    """Push the latest export's test items, blind, to the blind instance (``ls``: its client;
    None: tool down, policy advisory: the recorded tasks stay, with ``note``). The tool's tasks
    carry only an opaque key; the rows of ``review_tasks`` (file ``<b>__human``) map each task back
    to its item and revision. Rows of an older baseline on the review instance are kept as they
    are, never pushed against here (their project ids mean other projects on this instance).
    ``rs``: the review settings in effect (``StageSettings.review``)."""
    items, version = test_items(store, spec)
    items = subset_of(items, spec, load_eval_config())
    recorded = read(store, "review_tasks", part(spec))
    recorded = recorded if len(recorded) else pd.DataFrame(columns=TASK_COLUMNS)
    prev = blind_rows(recorded)
    legacy = recorded.drop(prev.index)
    out = StageResult(metadata={"export_version": version or "none", "items": len(items)})
    if len(legacy):
        out.metadata["legacy_tasks"] = (
            f"{len(legacy)} task(s) of an older human baseline on the review instance, kept as they are "
            "(answers there were given where the gold was reachable; they are not read)"
        )
    if items.empty or ls is None or rs.policy == ReviewPolicy.OFF:
        out.metadata["note"] = note or (
            f"review policy off for {spec.name}"
            if rs.policy == ReviewPolicy.OFF
            else f"no exported {spec.name} test items yet: materialize `{spec.name}_export` first"
        )
        out.tables["review_tasks"] = {part(spec): recorded}
        if ls is None and not items.empty and rs.policy != ReviewPolicy.OFF:
            # the blind copies are made now, in the build, while the tool is down: the loop's
            # first push then only uploads (MAIA's 195 clips took the loop run's slot for minutes)
            refused = _wanted(store, spec, rs, items)[1]
            out.metadata["blind_media"] = f"{len(items) - len(refused)} item(s) ready for the first push"
            if refused:
                out.metadata["refused"] = refused
        return out
    ls.ensure_up()
    root = store.data_dir.resolve()
    blind = blind_folder(root, spec)  # Label Studio refuses a storage on a missing folder
    max_opts = max([len(as_list(o) or []) for o in items["options"]] + [2])
    title = f"{spec.title} {BLIND_TITLE} · {spec.name} {version}"
    desc = f"Answer each {spec.title} item as you understand it (no gold shown); scored like a model."
    p = project.ensure(ls, title, human_config(rs, max_opts), project.settings(rs.human_answers, desc))
    wanted, refused = blind_tasks(store, spec, rs, items)
    links = project.serve(ls, int(p["id"]), root, root / BLIND_DIR, blind)  # served folders: regular files only
    # the push matches tasks by the key they carry; the table keeps item id and revision
    real = {
        task_key(root, spec, str(it["item_id"]), revision(it)): (str(it["item_id"]), revision(it))
        for it in items.to_dict("records")
    }
    for r in prev.itertuples():
        real.setdefault(task_key(root, spec, str(r.item_id), str(r.revision)), (str(r.item_id), str(r.revision)))
    keyed = prev.copy()
    if len(keyed):
        keys = [task_key(root, spec, str(r.item_id), str(r.revision)) for r in prev.itertuples()]
        keyed["item_id"], keyed["revision"] = keys, keys
    rows, counts = push(ls, spec.name, "human", p, wanted, keyed, set())
    known = rows["item_id"].isin(list(real))
    rows.loc[known, "revision"] = [real[k][1] for k in rows.loc[known, "item_id"]]
    rows.loc[known, "item_id"] = [real[k][0] for k in rows.loc[known, "item_id"]]
    out.tables["review_tasks"] = {part(spec): pd.concat([legacy, rows], ignore_index=True) if len(legacy) else rows}
    out.metadata["pushed"] = counts
    if refused:
        out.metadata["refused"] = refused
    if links:
        out.metadata["refused_links"] = [f"{r.path} ({r.reason}: {r.detail})" for r in links]
    return out


# the blind form's controls (``labelconfig.human_config``): result type and the object each is about
BLIND_CONTROLS = {
    "choice": ("choices", "question"),
    "answer_text": ("textarea", "question"),
    "box": ("rectanglelabels", "image"),
}


def refusal_of(annotation: dict[str, Any]) -> str | None:
    """Why a blind answer cannot be read exactly (None when it can): a skip, a control or object the
    blind form does not have, or a typed answer that is not text people can read
    (``forge.checks.text_rules``). Such an answer is kept, with the reason, and never scored."""
    if annotation.get("was_cancelled"):
        return f"refused: {skipped('answer')}"
    why = control_problem(annotation.get("result"), BLIND_CONTROLS, "the blind form")
    if why:
        return f"refused: {why}"
    for r in annotation.get("result") or []:
        t = (r.get("value") or {}).get("text") if r.get("from_name") == "answer_text" else None
        text = "\n".join(str(x) for x in (t if isinstance(t, list) else [t]) if x is not None)
        if text.strip():
            try:
                text_rules.clean(text, "the typed answer")
            except text_rules.TextRefused as exc:
                return f"refused: {exc}"
    return None


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
            text = unicodedata.normalize("NFC", text)  # as text_rules.clean gives it (refusal_of refuses the rest)
        elif r.get("from_name") == "box" and not box:
            v = r.get("value") or {}
            box = box_answer(BOX_LABEL, [float(v.get(k, 0)) / 100 for k in ("y", "x", "height", "width")])
    if letters and kind == "yesno":  # read by option text (Yes / No), not by letter
        return ", ".join(options[LETTERS.index(x)] for x in letters if LETTERS.index(x) < len(options))
    if letters and kind in ("mcq", "multi"):
        return ", ".join(sorted(letters))
    return text or box or ", ".join(letters)


def answers(ls: LabelStudio, task_rows: pd.DataFrame, users: dict[int, str]) -> list[dict[str, Any]]:
    """Every submitted answer of the recorded blind tasks (``ls``: the blind instance), oldest
    first, mapped back to its item through ``task_rows`` (the tasks themselves carry only an opaque
    key; rows of an older baseline on the review instance are not read: ``blind_rows``)."""
    task_rows = blind_rows(task_rows)
    by_kind, _ = poll(ls, task_rows, ("human",))
    item_of = {int(r.task_id): str(r.item_id) for r in task_rows.itertuples()}
    out = []
    for pid, tasks in by_kind["human"]:
        for t in tasks:
            item = item_of.get(int(t["id"]))
            for a in t.get("annotations") or []:
                if item is None:  # a skip is kept: ``pick`` records it with its reason
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
                        "seconds": lead_time(a),
                        "created_at": pd.Timestamp(a["created_at"]).tz_convert("UTC") if a.get("created_at") else None,
                    }
                )
    return sorted(out, key=lambda r: (str(r["created_at"]), r["answer_id"]))


def saw_gold(
    store: TableStore, spec: BenchmarkSpec, ls: LabelStudio | None, users: dict[int, str]
) -> dict[tuple[str, str], str]:
    """(item id, person) → how that person saw the item's gold: a verdict on it in ``verdicts``
    (any revision, stale or not), or an annotation in a live review, adjudication or returned task
    of the review instance (``ls``, its ``users``; None: the verdicts table only) not yet read back.
    Participants answer on the blind instance, which holds no review project; a person is the same
    person on both by their e-mail, so a reviewer also invited there is still caught here."""
    out: dict[tuple[str, str], str] = {}
    v = read(store, "verdicts", spec.name)
    for r in v.to_dict("records") if len(v) else []:
        why = f"saw_gold: {r['project_kind']} verdict {r['verdict_id']} on the item"
        for person in (r.get("reviewer"), r.get("author")):  # whoever made or changed it saw the form
            if isinstance(person, str) and person:
                out.setdefault((str(r["item_id"]), person), why)
    tasks = read(store, "review_tasks", spec.name)
    if ls is None:
        return out
    by_kind, _ = poll(ls, tasks, ("review", "adjudication", "returned"))
    for kind, projects in by_kind.items():
        for pid, ts in projects:
            for t in ts:
                for a in t.get("annotations") or []:
                    changer, author, _flag = who(a, users)
                    for person in {changer, author} - {None}:
                        key = (str((t.get("data") or {}).get("item_id")), person)
                        out.setdefault(key, f"saw_gold: {kind} annotation {pid}:{a['id']} on the item")
    return out


def pick(
    found: list[dict[str, Any]],
    seen: dict[tuple[str, str], str],
    subset: set[str] | None = None,
    excluded: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Each answer with ``used`` / ``excluded_reason``: per item and person the earliest answer is
    scored, in that person's own baseline, unless it is refused (empty, skipped, an unknown control
    or object, a typed answer ``text_rules`` refuses: ``refusal_of``), changed by someone else,
    outside the declared subset, by an excluded annotator (``excluded``: person → reason, e.g. the
    control questions) or by someone who saw the item's gold. The others are kept and say why not."""
    used: set[tuple[str, str]] = set()
    for r in found:
        key = (r["item_id"], r["person"])
        why = r.get("flag") or refusal_of(r["annotation"])
        if why is None and not reply_of(r["annotation"], "", []):
            why = "refused: empty_answer (no choice, text or box)"
        if why is None and subset is not None and r["item_id"] not in subset:
            why = "not_in_subset: the item is outside the human run's declared subset"
        if why is None and (excluded or {}).get(r["person"]):
            why = f"excluded_annotator: {excluded[r['person']]}"
        why = why or seen.get(key)
        if why is None and key in used:
            why = "later_answer: the person's earlier answer is scored"
        r["used"], r["excluded_reason"] = why is None, why
        if why is None:
            used.add(key)
    return found


def human_block(spec: BenchmarkSpec, cfg: dict[str, Any]) -> dict[str, Any]:
    """The human run's settings (``human:`` of the paper's evals.yaml, overridable in
    config/evals.yaml): ``subset`` items (None = every test item; the paper's size, VAGUE 400),
    drawn by ``seed``; ``min_answers`` a person needs to count in ``human (avg)`` / ``(best)``;
    ``best_min_items`` a person needs to be ``human (best)`` (null: half the subset's items, so one
    lucky answer is never the best)."""
    raw = dict(benchmark_block(cfg, spec).get("human") or {})
    unknown = set(raw) - {"subset", "seed", "min_answers", "best_min_items"}
    if unknown:
        raise ValueError(f"{spec.name}: unknown human-baseline settings {sorted(unknown)}")
    size = raw.get("subset")
    if size is not None and (not isinstance(size, int) or size < 1):
        raise ValueError(f"{spec.name}: human.subset must be a positive integer or null, got {size!r}")
    best = raw.get("best_min_items")
    if best is not None and (isinstance(best, bool) or not isinstance(best, int) or best < 1):
        raise ValueError(f"{spec.name}: human.best_min_items must be a positive integer or null, got {best!r}")
    return {
        "subset": size,
        "seed": raw.get("seed", 0),
        "min_answers": int(raw.get("min_answers", 1)),
        "best_min_items": best,
    }


def best_min_items(h: dict[str, Any], subset: int) -> int:
    """The fewest items a person answers to be ``human (best)``: the declared number, else half the
    items of the human run (none of the papers says; a person who answered one item is no best)."""
    return int(h["best_min_items"]) if h.get("best_min_items") else max(1, -(-subset // 2))


def subset_of(items: pd.DataFrame, spec: BenchmarkSpec, cfg: dict[str, Any]) -> pd.DataFrame:
    """The test items of the human run: the declared subset, deterministic by seed."""
    if items.empty:
        return items
    h = human_block(spec, cfg)
    keep = set(subset(items["item_id"].astype(str), h["subset"], h["seed"]))
    return items[items["item_id"].astype(str).isin(keep)].reset_index(drop=True)


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


@dataclass
class Baseline:
    """What ``score`` writes: each person's predictions (``eval_predictions``, model
    ``human:<person>``), the ``human (avg)`` / ``human (best)`` rows (``eval_scores``), each
    person's scores (``human_scores``), every answer (``human_answers``) and the metadata."""

    predictions: pd.DataFrame
    scores: pd.DataFrame
    people: pd.DataFrame
    answers: pd.DataFrame
    metadata: dict[str, Any]


def _person_predictions(
    spec: BenchmarkSpec,
    setting: Setting,
    reqs: list[rq.EvalRequest],
    mine: dict[str, dict[str, Any]],
    by_id: dict[str, dict[str, Any]],
    judge: Any,
    person: str,
    scoring: dict[str, Any],
) -> list[dict[str, Any]]:
    """One person's answers as prediction rows, open-ended ones judged by the benchmark's judge."""
    model = person_model(person)
    chosen = [er for er in reqs if str(er.item["item_id"]) in mine]
    results = []
    for er in chosen:
        reply = reply_of(mine[str(er.item["item_id"])], er.kind, list(er.options or []))
        results.append(
            LLMResult(er.request.item_id, True, {"text": reply}, reply, None, None, MODEL, "", model, MODEL, False, 1)
        )
    split_of = {str(er.item["item_id"]): str(er.item.get("split") or "test") for er in chosen}
    rows = rq.prediction_rows(model, spec, setting, split_of, chosen, results, scoring)
    unparseable_open_ended(spec, rows)
    judge_rows(spec, rows, by_id, judge, f"{model}__{setting.name}", HUMAN, scoring)
    return rows


def score(
    store: TableStore,
    spec: BenchmarkSpec,
    ls: LabelStudio,
    judge: Any = None,
    excluded: dict[str, str] | None = None,
    review: LabelStudio | None = None,
) -> Baseline:
    """The per-annotator human baseline (II-Bench's Human_avg / Human_best): every person's answers
    scored on their own by the benchmark's scorers (open-ended ones by its judge, ``judge``: the
    models' judge engine), their average and their best. ``excluded``: person → why their answers
    do not count (``control_exclusions``). An answer by someone who saw the item's gold is never
    scored (``saw_gold``; ``review``: the review instance, ``ls`` the blind one)."""
    tasks = read(store, "review_tasks", part(spec))
    cfg = load_eval_config()
    items, version = test_items(store, spec)
    none = pd.DataFrame(columns=ANSWER_COLUMNS)
    if not len(tasks) or items.empty:
        md = {"note": "no human-baseline tasks yet", "answered": 0}
        return Baseline(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), none, md)
    ls.ensure_up()
    users = ls.users()
    seen = saw_gold(store, spec, review, review.users() if review is not None else {})
    chosen = subset_of(items, spec, cfg)
    subset = set(chosen["item_id"].astype(str))
    found = pick(answers(ls, tasks, users), seen, subset, excluded)
    setting = visual_setting(spec, cfg)
    answered_ids = {r["item_id"] for r in found if r["used"]}
    answered = chosen[chosen["item_id"].astype(str).isin(answered_ids)].to_dict("records")
    prompts = {p.name: load_prompt(p) for p in prompt_files(spec, cfg)}  # as forge.evals.pipeline.evaluate
    for task, fname in (benchmark_block(cfg, spec).get("prompts") or {}).items():
        prompts[f"task:{task}"] = prompts[fname]
    reqs, skipped = rq.build_requests(spec, setting, answered, prompts, HUMAN, store.data_dir)
    kind_of = {str(er.item["item_id"]): (er.kind, list(er.options or [])) for er in reqs}
    table = _answer_table(spec, version, found, kind_of)
    scoring = dict(benchmark_block(cfg, spec).get("scoring") or {})
    by_id = {str(r["item_id"]): r for r in items.to_dict("records")}
    b = cfg.get("bootstrap") or {}
    boot = (int(b.get("n", 1000)), int(b.get("seed", 0)), float(b.get("alpha", 0.05)))
    h = human_block(spec, cfg)
    preds, people = [], []
    for person in sorted({r["person"] for r in found if r["used"]}):
        mine = {r["item_id"]: r["annotation"] for r in found if r["used"] and r["person"] == person}
        rows = _person_predictions(spec, setting, reqs, mine, by_id, judge, person, scoring)
        frame = pd.DataFrame(rows)
        if frame.empty:
            continue
        preds.append(frame)
        people.append((score_person(spec, person, frame, items, boot, scoring), len(frame) >= h["min_answers"]))
    counted = [p for p, ok in people if ok]
    need = best_min_items(h, len(chosen))
    per, summary, best = baseline_frames(counted, setting.name, boot, need)
    below = [p for p, ok in people if not ok]
    if below:
        more, _, _ = baseline_frames(below, setting.name, boot)
        per = pd.concat([per, more], ignore_index=True)
    if len(per):
        per["counted"] = per["person"].isin([p.person for p in counted])
    why = table["excluded_reason"].fillna("").astype(str)
    excluded_rows = table[(why != "") & ~why.str.startswith("later_answer")]
    md = {
        "setting": setting.name,
        "items": len(items),
        "subset": len(chosen),
        "answered": len(answered_ids),
        "answers": len(found),
        "people": len(people),
        "people_counted": len(counted),
        "best_person": best,
        "best_person_items": next((items_of(p) for p in counted if p.person == best), None),
        "best_min_items": need,
        "excluded": excluded_rows["excluded_reason"].str.split(":").str[0].value_counts().to_dict(),
        "excluded_people": sorted(set(excluded or {})),
        "skipped": len(skipped),
    }
    pred_frame = pd.concat(preds, ignore_index=True) if preds else pd.DataFrame()
    if len(pred_frame):
        pred_frame["detail"] = pred_frame["detail"].map(lambda d: json.dumps(d, ensure_ascii=False, default=str))
    split = setting_split({str(r["item_id"]): str(r.get("split") or "test") for r in answered})
    for frame in (pred_frame, summary, per):
        if len(frame):
            frame["benchmark"] = spec.name
            frame["export_version"] = version
            if frame is not pred_frame:
                frame["split"] = split
                frame["backend"] = MODEL
    return Baseline(pred_frame, summary, per, table, md)


def _answer_table(
    spec: BenchmarkSpec, version: str, found: list[dict[str, Any]], kind_of: dict[str, tuple[str, list[str]]]
) -> pd.DataFrame:
    return pd.DataFrame(
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


def control_exclusions(store: TableStore, spec: BenchmarkSpec) -> dict[str, str]:
    """person → why their answers do not count: the annotators a protocol step's control questions
    excluded (``protocol_answers.excluded``, docs/review.md), for every step of the benchmark."""
    if not store.exists("protocol_answers"):
        return {}
    df = store.read("protocol_answers", where="benchmark = ? and excluded is not null", params=[spec.name])
    out: dict[str, str] = {}
    for r in df.sort_values("step").itertuples() if len(df) else []:
        out.setdefault(str(r.person), f"{r.step}: {r.excluded}")
    return out


def setting_split(split_of: dict[str, str]) -> str:
    return next(iter(set(split_of.values())), "test")
