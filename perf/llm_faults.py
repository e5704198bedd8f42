"""LLM stages under faults, against the double: wall time as a ratio to fault-free, items lost.

Part ``hang`` (issue 23): an LLM-heavy refine stage (generate → LLM judge → one revision for
a quarter of the items → judge again), over several partitions run one after another as the
assets do, with 0 %, 2 % and 5 % of requests hanging past the client timeout (60 s, the
default), each plus the 429/5xx mix (10 % 429 with retry-after 0.2 s, 5 % 500), and 5 %
hanging alone. Faults are drawn per request, seeded by the request body and its repeat
count, so a run repeats.

Part ``transient`` (issue 14 point 8): 2,000 requests with 10 % 500s, 5 % malformed JSON and
5 % schema-invalid replies vs fault-free: items lost and throughput side by side.

Part ``demo`` (issue 23's acceptance): the LLM stages of the demo graph (``python -m cli.build
--demo`` over the sources of tests/e2e/run_nonstub.py, against the plausible double on
127.0.0.1) at 0 %, 2 % and 5 % of requests hanging past the client timeout, each plus the
429/5xx mix: the wall time of the build of those stages as a ratio to fault-free, and items
lost (rows of the recipe tables missing against fault-free, and items rejected because a call
failed). The upstream stages (ingest, vision) are built once, fault-free, into WORK and reused.

Every scenario uses a fresh cache and ledger (a cold start: no latency history).
Usage: .venv/bin/python perf/llm_faults.py [hang|transient|all] [ITEMS] [LATENCY_S]
       .venv/bin/python perf/llm_faults.py demo WORK [--tail MEDIAN_S] [GROUP ...]
       (default: every recipe group; --tail adds a seeded log-normal latency to every reply)
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forge.llm import LLMRequest, load_prompt
from forge.llm.refine import refine
from tests.llm_double import LLMDouble, Reply, double_resource

GEN = """\
name: bench_gen
variables: [text]
system: You write one question about the implied meaning of a text.
user: "Text: {{text}}"
schema:
  type: object
  required: [question, label]
  properties:
    question: {type: string, minLength: 5}
    label: {enum: [irony, metaphor, literal]}
"""
JUDGE = """\
name: bench_judge
variables: [question]
system: You review questions.
user: "Question: {{question}}"
schema:
  type: object
  required: [verdict, feedback]
  properties:
    verdict: {enum: [pass, minor, major, reject]}
    feedback: {type: string}
"""
MIX = {"429": 0.10, "500": 0.05}
EXTRA: dict = {}


def responder(faults: dict[str, float], seed: str):
    seen: dict[str, int] = {}

    def respond(body):
        digest = hashlib.sha256(json.dumps(body["messages"], sort_keys=True).encode()).hexdigest()
        seen[digest] = seen.get(digest, 0) + 1
        rng = random.Random(f"{seed}:{digest}:{seen[digest]}")
        x = rng.random()
        for kind, p in faults.items():
            if x < p:
                return {
                    "hang": Reply.hang(),
                    "429": Reply.rate_limited(0.2),
                    "500": Reply.error(500),
                    "bad_json": Reply.text('{"question": "Is it'),
                    "invalid_schema": Reply.json({"question": "Why?", "label": "sarcasm"}),
                }[kind]
            x -= p
        name = ((body.get("response_format") or {}).get("json_schema") or {}).get("name")
        if name == "bench_judge":
            # a quarter of first-round questions need a revision; revised ones pass
            text = json.dumps(body["messages"])
            major = "revised" not in text and int(digest[:2], 16) < 64
            return {"verdict": "major" if major else "pass", "feedback": "make it less literal" if major else ""}
        revised = "major revision" in json.dumps(body["messages"])
        return {"question": f"{'revised ' if revised else ''}What does text {digest[:8]} imply?", "label": "irony"}

    return respond


def run_hang(items: int, latency: float, parts: int = 4, conc: int = 64) -> None:
    scenarios = [
        ("fault-free", {}),
        ("0% hang + 429/5xx mix", dict(MIX)),
        ("2% hang + 429/5xx mix", {"hang": 0.02, **MIX}),
        ("5% hang + 429/5xx mix", {"hang": 0.05, **MIX}),
        ("5% hang alone", {"hang": 0.05}),
        ("5% hang + mix, partitions ||", {"hang": 0.05, **MIX}),
        ("fault-free again", {}),
    ]
    walls: list[tuple[str, float, str]] = []
    print(
        f"refine stage: {items} items in {parts} partitions (sequential), generate + judge (+1 revision for "
        f"~25%), latency {latency}s, {conc} in flight, client timeout 60 s"
    )
    for name, faults in scenarios:
        with tempfile.TemporaryDirectory() as tmp, LLMDouble(latency=latency, record_bodies=False) as double:
            d = Path(tmp)
            (d / "gen.yaml").write_text(GEN)
            (d / "judge.yaml").write_text(JUDGE)
            gen, judge = load_prompt(d / "gen.yaml"), load_prompt(d / "judge.yaml")
            double.responder = responder(faults, name)
            engine = double_resource(
                double, str(d / "cache.sqlite"), max_concurrency=conc, timeout_s=60.0, backoff_base_s=0.2, **EXTRA
            ).engine()
            per = items // parts
            accepted = lost = 0
            t0 = time.perf_counter()

            def build(req, out, judge=judge):
                return LLMRequest(item_id=req.item_id, prompt=judge, variables={"question": out["question"]})

            def partition(p: int, gen=gen, per=per, engine=engine, build=build):
                reqs = [
                    LLMRequest(item_id=f"p{p}i{i}", prompt=gen, variables={"text": f"text {p}-{i}"}) for i in range(per)
                ]
                return refine(engine, "bench", f"b{p}", reqs, judge=build, max_rounds=3)

            # as the assets do (one partition after another), or sharing the budget (map_partitions)
            runs = (
                engine.map_partitions(list(range(parts)), partition)
                if "||" in name
                else [partition(p) for p in range(parts)]
            )
            for run in runs:
                accepted += len(run.accepted())
                lost += sum(o.reason in ("generation_failed", "judge_failed") for o in run.rejected())
            wall = time.perf_counter() - t0
            st = engine.stats()
            rest = (
                f"{accepted:9d} {lost:5d} {len(double.requests):9d} {double.hung:5d} "
                f"{st['hedges']:7d} {st['timeouts']:9d}"
            )
            walls.append((name, wall, rest))
            print(f"  ... {name}: {wall:.2f} s", flush=True)
            engine.close()
    # The shared 2-core machine's load drifts: fault-free is measured first and last, ratios use the mean.
    base = (walls[0][1] + walls[-1][1]) / 2
    print(
        f"{'scenario':26s} {'wall s':>8s} {'x fault-free':>13s} {'accepted':>9s} {'lost':>5s} {'requests':>9s} "
        f"{'hung':>5s} {'hedges':>7s} {'timeouts':>9s}"
    )
    for name, wall, rest in walls:
        print(f"{name:26s} {wall:8.2f} {wall / base:13.2f} {rest}")


def run_transient(n: int, latency: float, conc: int = 64) -> None:
    print(f"\n{n} requests, latency {latency}s, {conc} in flight")
    print(
        f"{'scenario':44s} {'wall s':>8s} {'items/s':>8s} {'ok':>6s} {'lost':>5s} {'requests':>9s} {'throughput':>11s}"
    )
    base = None
    mix = {"500": 0.10, "bad_json": 0.05, "invalid_schema": 0.05}
    for name, faults, extra in [
        ("fault-free", {}, {}),
        ("10% 500 + 5% bad JSON + 5% schema-invalid", mix, {}),
        (
            "same mix, one repair turn (the old policy)",
            mix,
            {"repair_budgets": {"JSONDecodeError": 1, "SchemaError": 1}},
        ),
    ]:
        with tempfile.TemporaryDirectory() as tmp, LLMDouble(latency=latency, record_bodies=False) as double:
            (Path(tmp) / "gen.yaml").write_text(GEN)
            gen = load_prompt(Path(tmp) / "gen.yaml")
            double.responder = responder(faults, name)
            engine = double_resource(
                double, str(Path(tmp) / "cache.sqlite"), max_concurrency=conc, timeout_s=60.0, **extra
            ).engine()
            reqs = [LLMRequest(item_id=f"i{i}", prompt=gen, variables={"text": f"text number {i}"}) for i in range(n)]
            t0 = time.perf_counter()
            res = engine.run("bench", "b", reqs)
            wall = time.perf_counter() - t0
            ok = sum(r.ok for r in res)
            rate = ok / wall
            base = base or rate
            print(
                f"{name:44s} {wall:8.2f} {rate:8.1f} {ok:6d} {n - ok:5d} {len(double.requests):9d} {rate / base:10.0%}",
                flush=True,
            )
            engine.close()


RECIPE_GROUPS = ("hummus", "iibench", "maia", "vague", "vimu")


def faulty(inner, faults: dict[str, float], seed: str, tail: float = 0.0):
    """``inner`` (the plausible model) behind the same seeded per-request faults as ``responder``.

    ``tail`` > 0: every answered request also takes a seeded log-normal time (median ``tail``
    seconds, sigma 1, capped at 30 s: about 1 % of requests take over 10× the median), the
    long tail a hosted API has even when nothing hangs."""
    seen: dict[str, int] = {}
    fault_reply = {"hang": Reply.hang, "429": lambda: Reply.rate_limited(0.2), "500": lambda: Reply.error(500)}

    def respond(body):
        digest = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
        seen[digest] = seen.get(digest, 0) + 1
        rng = random.Random(f"{seed}:{digest}:{seen[digest]}")
        x = rng.random()
        for kind, p in faults.items():
            if x < p:
                return fault_reply[kind]()
            x -= p
        reply = inner(body)
        if tail > 0:
            reply = (
                Reply.json(reply) if isinstance(reply, dict) else Reply.text(reply) if isinstance(reply, str) else reply
            )
            reply.delay += min(30.0, rng.lognormvariate(math.log(tail), 1.0))
        return reply

    return respond


def run_demo(work: Path, groups: tuple[str, ...], latency: float = 0.0, tail: float = 0.0) -> None:
    from definitions import build_defs
    from forge.storage import TableStore
    from tests.e2e.run_nonstub import build
    from tests.llm_double.plausible import Plausible
    from tests.llm_double.server import _free_port

    graph = build_defs().resolve_asset_graph()
    keys = {k.to_user_string(): graph.get(k).group_name for k in graph.materializable_asset_keys}
    llm = sorted(k for k, g in keys.items() if g in groups)
    # splits/evals read the exports: not LLM stages of the recipes, left out of both builds
    upstream = sorted(k for k, g in keys.items() if g not in (*RECIPE_GROUPS, "splits", "evals", "releases"))
    data = work / "data"
    port = _free_port()
    if not (work / "upstream.done").exists():
        with LLMDouble(record_bodies=False) as double:
            double.responder = Plausible(seed=7)
            t0 = time.perf_counter()
            proc = build(work, double, port, select=upstream, timeout=3600)
            print(f"upstream ({len(upstream)} assets): rc={proc.returncode} in {time.perf_counter() - t0:.0f} s")
            if proc.returncode:
                sys.exit(proc.stdout[-4000:] + proc.stderr[-4000:])
        (work / "upstream.done").write_text("ok\n")
    tables = [k.split("/")[-1] for k in llm]  # an asset's main table has its name
    scenarios = [
        ("fault-free", {}),
        ("0% hang + 429/5xx mix", dict(MIX)),
        ("2% hang + 429/5xx mix", {"hang": 0.02, **MIX}),
        ("5% hang + 429/5xx mix", {"hang": 0.05, **MIX}),
        ("fault-free again", {}),
    ]
    print(
        f"demo LLM stages: {len(llm)} assets of {', '.join(groups)}; latency {latency}s; "
        f"long tail {f'log-normal, median {tail}s' if tail else 'none'}; client timeout 60 s; {work}"
    )
    rows: list[tuple[str, float, int, int, int, int, int, int]] = []
    base_rows: int | None = None
    for name, faults in scenarios:
        for f in ("llm_cache.sqlite", "llm_ledger.sqlite"):  # cold: every call is sent again
            for p in (data / "cache").glob(f + "*"):
                p.unlink()
        with LLMDouble(latency=latency, record_bodies=False) as double:
            double.responder = faulty(Plausible(seed=7), faults, name, tail)
            load = Path("/proc/loadavg").read_text().split()[0]
            t0 = time.perf_counter()
            proc = build(work, double, port, select=llm, timeout=7200)
            wall = time.perf_counter() - t0
            n_req, hung = len(double.requests), double.hung
        if proc.returncode:
            print(proc.stdout[-3000:], proc.stderr[-3000:])
        store = TableStore(data)
        n_rows = sum(len(store.read(t)) for t in tables if store.exists(t))
        rej = store.read("rejects") if store.exists("rejects") else None
        rej = rej[rej["stage"].isin(tables)] if rej is not None and len(rej) else None
        failed = 0 if rej is None else int(rej["error_class"].fillna("").str.startswith("Backend").sum())
        base_rows = n_rows if base_rows is None else base_rows
        rows.append((name, wall, proc.returncode, n_rows, base_rows - n_rows, failed, n_req, hung))
        print(f"  ... {name}: {wall:.0f} s (load {load} at start), rc={proc.returncode}", flush=True)
    base = (rows[0][1] + rows[-1][1]) / 2
    print(
        f"{'scenario':24s} {'wall s':>7s} {'x fault-free':>13s} {'rc':>3s} {'rows':>6s} {'lost':>5s} "
        f"{'call-failed':>12s} {'requests':>9s} {'hung':>5s}"
    )
    for name, wall, rc, n_rows, lost, failed, n_req, hung in rows:
        print(
            f"{name:24s} {wall:7.0f} {wall / base:13.2f} {rc:3d} {n_rows:6d} {lost:5d} {failed:12d} {n_req:9d} {hung:5d}"
        )


def main() -> None:
    what = sys.argv[1] if len(sys.argv) > 1 else "all"
    if what == "demo":
        args = sys.argv[3:]
        tail = 0.0
        if "--tail" in args:  # --tail MEDIAN_S: the long-tail latency of a hosted API
            i = args.index("--tail")
            tail, args = float(args[i + 1]), args[:i] + args[i + 2 :]
        run_demo(Path(sys.argv[2]).resolve(), tuple(args) or RECIPE_GROUPS, tail=tail)
        return
    latency = float(sys.argv[3]) if len(sys.argv) > 3 else 0.2
    if what in ("hang", "all"):
        run_hang(int(sys.argv[2]) if len(sys.argv) > 2 else 800, latency)
    if what in ("transient", "all"):
        run_transient(int(sys.argv[2]) if len(sys.argv) > 2 and what == "transient" else 2000, latency)


if __name__ == "__main__":
    main()
