"""The evaluation path side by side with lmms-eval and a bare ``AsyncOpenAI`` loop, in one run.

The same N II-Bench requests (setting ``none``: the paper's prompt and the item's image) from one
export go to one OpenAI-protocol double (tests/llm_double, in a process of its own, fixed server
latency) at the same concurrency, three ways, each in a process of its own:

* ``forge``: the project's evaluation path, ``forge.evals.pipeline.evaluate`` (engine, cache,
  reply reading, item scores, the paper's aggregates with their bootstrap intervals);
* ``lmms``: lmms-eval 0.7.3's own command line (``.venv-lmms``, ``scripts/ensure_lmms.sh``) on the
  export's task folder (``--model openai``, ``num_concurrent`` = the concurrency);
* ``bare``: ``AsyncOpenAI`` with the aiohttp client and a semaphore, nothing else.

Prints, per path, the process's wall time (start-up, reading the export and scoring included),
the span from the first request the server saw to its last reply, both × the ideal
(N / concurrency × latency), and peak memory (the process's max RSS, from ``wait4``).

    .venv/bin/python perf/eval_vs_lmms.py [--n 1000] [--latency 0.2] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
LMMS = Path(os.environ.get("SUBTEXT_LMMS_VENV") or ROOT / ".venv-lmms") / "bin" / "lmms-eval"
REPLY = "Answer: (C)"


def build_export(data: Path, n: int) -> None:
    """An II-Bench export of ``n`` test items sharing one image (the lmms-eval task folder too)."""
    import pandas as pd

    from tests.evals.test_e2e import _img, _item, publish_items

    m = [_img(data, "bench")]
    rows = [
        _item("iibench", f"b{i:05d}", "mcq", "life", f"Question {i}: what is implied?",
              [f"option {k} of {i}" for k in range(6)], "C", f"s{i}", m, labels={"domain": "life"})
        for i in range(n)
    ]  # fmt: skip
    publish_items(data, "iibench", pd.DataFrame(rows))


def serve(latency: float) -> None:
    """The double, in this process until stdin closes; prints its base URL, then for every line
    read the requests since the last one: count, first request → last reply (s), peak in flight."""
    from tests.llm_double import LLMDouble

    d = LLMDouble(latency=latency, record_bodies=False)
    d.responder = lambda body: REPLY
    d.start()
    print(d.base_url, flush=True)
    for _ in sys.stdin:
        with d._lock:
            ts = [r["t"] for r in d.requests]
            span = max(ts) + latency - min(ts) if ts else 0.0
            print(json.dumps({"requests": len(ts), "span_s": span, "max_in_flight": d.max_in_flight}), flush=True)
            d.requests.clear()
            d.max_in_flight = 0
    d.stop()


def run_forge(data: Path, url: str, conc: int) -> None:
    from forge.benchmarks.registry import get
    from forge.evals.config import ModelSpec, benchmark_block
    from forge.evals.pipeline import evaluate, load_export, model_engine
    from forge.llm.settings import EngineSettings

    os.environ["BENCH_KEY"] = "sk-bench"
    spec = get("iibench")
    cfg = {"benchmarks": {}, "circular": False}
    block = benchmark_block(cfg, spec)
    cfg["benchmarks"]["iibench"] = {**block, "settings": [s for s in block["settings"] if s["name"] == "none"]}
    model = ModelSpec(name="bench", model="bench", base_url=url, api_key_env="BENCH_KEY", params={"temperature": 0})
    engine = model_engine(model, EngineSettings(max_concurrency=conc, timeout_s=60), data / "forge_cache.sqlite")
    pub = load_export(data / "exports", spec, "v1")
    t0 = time.perf_counter()
    preds, scores, _ = evaluate(spec, model, cfg, pub.items, None, data, engine, None)
    acc = scores[(scores["metric"] == "accuracy") & (scores["slice"] == "all")]["value"].iloc[0]
    print(json.dumps({"inner_s": time.perf_counter() - t0, "n": len(preds), "accuracy": float(acc)}))


def run_bare(data: Path, url: str, conc: int) -> None:
    from openai import AsyncOpenAI, DefaultAioHttpClient

    from forge.evals.lmms_task import ExportTask

    task = ExportTask(data / "exports" / "iibench" / "v1", "iibench")
    docs = task.records
    image = {}

    def payload(doc: dict) -> list[dict]:
        msgs = task.messages("none", doc)
        for part in msgs[-1]["content"]:
            if part["type"] == "image":  # the file's bytes as a data URL, encoded once per file
                if part["url"] not in image:
                    image[part["url"]] = base64.b64encode(Path(part["url"]).read_bytes()).decode()
                part.update(type="image_url", image_url={"url": f"data:image/jpeg;base64,{image[part.pop('url')]}"})
        return msgs

    async def main() -> tuple[float, int]:
        sem = asyncio.Semaphore(conc)
        async with AsyncOpenAI(
            base_url=url, api_key="sk-bench", max_retries=0, http_client=DefaultAioHttpClient()
        ) as c:

            async def one(doc: dict) -> str:
                async with sem:
                    r = await c.chat.completions.create(model="bench", messages=payload(doc), temperature=0)
                    return r.choices[0].message.content or ""

            t0 = time.perf_counter()
            out = await asyncio.gather(*(one(d) for d in docs))
            return time.perf_counter() - t0, sum(o == REPLY for o in out)

    inner, ok = asyncio.run(main())
    print(json.dumps({"inner_s": inner, "n": len(docs), "ok": ok}))


def measure(cmd: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """(wall s, peak RSS MiB, stdout) of ``cmd``, reaped with ``wait4`` for its own rusage."""
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        pid = os.fork()
        if pid == 0:  # child: exec the command with stdout / stderr to the files
            try:
                os.chdir(cwd)
                os.dup2(fo.fileno(), 1)
                os.dup2(fe.fileno(), 2)
                os.execvpe(cmd[0], cmd, env)
            finally:
                os._exit(127)
        _, status, usage = os.wait4(pid, 0)
        wall = time.perf_counter() - t0
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read().decode(errors="replace"), fe.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(cmd[:4])} failed:\n{err[-3000:]}")
    return wall, usage.ru_maxrss / 1024, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--child", choices=["serve", "forge", "bare"])
    ap.add_argument("--data")
    ap.add_argument("--url")
    a = ap.parse_args()
    if a.child == "serve":
        return serve(a.latency)
    if a.child == "forge":
        return run_forge(Path(a.data), a.url, a.concurrency)
    if a.child == "bare":
        return run_bare(Path(a.data), a.url, a.concurrency)
    if not LMMS.is_file():
        raise SystemExit(f"lmms-eval is not installed at {LMMS}: run `bash scripts/ensure_lmms.sh`")
    ideal = a.n / a.concurrency * a.latency
    py, me = sys.executable, str(Path(__file__).resolve())
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        data.mkdir()
        build_export(data, a.n)
        server = subprocess.Popen(
            [py, me, "--child", "serve", "--latency", str(a.latency)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        url = server.stdout.readline().strip()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HF_"))}
        env |= {"HF_HOME": str(Path(tmp) / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
        common = ["--data", str(data), "--url", url, "--concurrency", str(a.concurrency)]
        lmms_cmd = [
            str(LMMS), "--model", "openai",
            "--model_args", f"model=bench,base_url={url},api_key=sk-bench,num_concurrent={a.concurrency},max_retries=1",
            "--include_path", "exports", "--tasks", "subtext_iibench_v1_none", "--output_path", str(Path(tmp) / "out"),
        ]  # fmt: skip
        runs = {
            "forge evaluation path": [py, me, "--child", "forge", *common],
            "lmms-eval 0.7.3 CLI": lmms_cmd,
            "bare AsyncOpenAI loop": [py, me, "--child", "bare", *common],
        }
        print(
            f"{a.n} requests, {a.concurrency} in flight, {a.latency * 1000:.0f} ms server latency: "
            f"ideal {ideal:.2f} s; load average {os.getloadavg()[0]:.1f} at start"
        )
        print(f"{'path':<24} {'process wall':>12} {'× ideal':>8} {'at server':>11} {'× ideal':>8} {'peak RSS':>9}")
        for name, cmd in runs.items():
            wall, rss, out = measure(cmd, data, env)
            info = json.loads(out.strip().splitlines()[-1]) if not name.startswith("lmms") else {}
            server.stdin.write("mark\n")
            server.stdin.flush()
            at = json.loads(server.stdout.readline())
            print(
                f"{name:<24} {wall:>11.2f}s {wall / ideal:>8.2f} {at['span_s']:>10.2f}s {at['span_s'] / ideal:>8.2f} "
                f"{rss:>6.0f} MiB  (server saw {at['requests']}, peak {at['max_in_flight']} in flight) {info}"
            )
        server.stdin.close()
        server.wait()
        print(f"load average {os.getloadavg()[0]:.1f} at end")


if __name__ == "__main__":
    main()
