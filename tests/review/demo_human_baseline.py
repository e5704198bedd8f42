"""The demo check of the per-annotator human baseline (docs/evals.md, "Human baselines"): on a demo
data dir (``make demo``), three scripted people answer II-Bench's exported test items in a real
Label Studio, and the leaderboard shows ``human (avg)`` and ``human (best)`` for II-Bench.

    python -m tests.review.demo_human_baseline data

Starts its own Label Studio on the data dir (a free port), signs three people up through the
invite link, has each answer every item in their own session (p0 every gold letter, p1 every item
but the first, p2 every other item), materializes ``iibench_human_tasks`` and
``iibench_human_results``, prints the rows and checks them against the hand-computed values.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import dagster as dg


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(data: Path) -> int:
    os.environ.update(
        SUBTEXT_DATA_DIR=str(data),
        SUBTEXT_REVIEW_PORT=str(_free_port()),
        SUBTEXT_REVIEW_BLIND_PORT=str(_free_port()),
        SUBTEXT_REVIEW_POLICY="advisory",
    )
    os.environ.pop("SUBTEXT_REVIEW_URL", None)
    os.environ.pop("SUBTEXT_REVIEW_BLIND_URL", None)
    cfg = data / "review_demo_human.yaml"
    cfg.write_text("benchmarks:\n  iibench: {human_answers: 3}\n")
    os.environ["SUBTEXT_REVIEW_CONFIG"] = str(cfg)

    import assets.evals.assets  # the leaderboard view (registered on import)
    from assets.people.factory import people_defs
    from forge.benchmarks.registry import get
    from forge.evals.pipeline import load_export
    from forge.people import server
    from forge.storage import TableStore, open_catalog
    from resources.llm import LLMResource
    from resources.review import ReviewResource
    from resources.storage import StorageResource
    from tests.review import scripted as sr

    started = server.start_both(data, timeout=300)  # the review instance and the blind baseline's
    try:
        from forge.people.client import LabelStudio

        _review, (_proc, srv) = started
        ls = LabelStudio(srv.url, srv.token)  # the blind instance: the baseline's tasks live there
        res = {
            "storage": StorageResource(data_dir=str(data)),
            "review": ReviewResource(),
            "llm": LLMResource(backend="stub", cache_path=str(data / "cache" / "demo_human.sqlite")),
        }
        assets = list(people_defs("iibench", "human").assets)
        dg.materialize(assets, selection=["iibench_human_tasks"], resources=res)
        items = load_export(data / "exports", get("iibench")).items
        gold = dict(zip(items["item_id"], items["answer"], strict=True))
        with open_catalog(TableStore(data)) as con:
            item_of = dict(con.execute("select task_id, item_id from review_tasks where kind = 'human'").fetchall())
        project = next(p for p in ls.projects() if "II-Bench blind baseline" in p["title"])
        tasks = sorted(((item_of[t["id"]], t) for t in ls.tasks(project["id"])), key=lambda x: x[0])
        right = {"p0": lambda k: True, "p1": lambda k: k > 0, "p2": lambda k: k % 2 == 0}
        for name, ok in right.items():
            who = sr.reviewer(ls, f"{name}@demo.test")
            for k, (item, t) in enumerate(tasks):
                letter = gold[item] if ok(k) else ("B" if gold[item] != "B" else "C")
                sr.submit(ls, t, who, [sr.choice("choice", letter)], seconds=20)
        dg.materialize(assets, selection=["iibench_human_results"], resources=res)
        with open_catalog(TableStore(data)) as con:
            lb = con.execute(
                "select model, setting, round(value, 4) v, ci_low, ci_high, n from leaderboard "
                "where benchmark = 'iibench' and model like 'human%' order by model"
            ).df()
        n = len(tasks)
        want = {"human (avg)": (n + (n - 1) + (n + 1) // 2) / (3 * n), "human (best)": 1.0}
        print(f"{n} II-Bench test items answered by 3 people")
        print(lb.to_string(index=False))
        got = dict(zip(lb["model"], lb["v"], strict=True))
        ok = set(got) == set(want) and all(abs(got[m] - want[m]) < 1e-3 for m in want)
        print("hand-computed:", {m: round(v, 4) for m, v in want.items()}, "→", "OK" if ok else "MISMATCH")
        return 0 if ok else 1
    finally:
        for proc, _s in started:
            proc.terminate()
        for proc, _s in started:
            proc.wait(timeout=30)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "data").resolve()))
