"""Evaluation throughput against the LLM double: requests/s with server latency, vs sequential.

Builds N II-Bench-shaped MCQ requests (image attached, free-text reply), runs them through
the evaluation path (engine → extraction → item score) at the configured concurrency and at
concurrency 1 (sequential, measured on a subset and extrapolated), then re-runs from cache.

    .venv/bin/python perf/eval_throughput.py [--n 1000] [--latency 0.2] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from PIL import Image

from forge.benchmarks.registry import get
from forge.evals.config import ModelSpec, Setting
from forge.evals.pipeline import model_engine
from forge.evals.requests import build_requests, prediction_rows
from forge.llm.prompts import load_prompt
from forge.llm.settings import EngineSettings
from tests.llm_double import LLMDouble


def items(n: int, data: Path) -> list[dict]:
    img = data / "media" / "b.jpg"
    img.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (64, 48), (10, 200, 90)).save(img)
    return [
        {
            "item_id": f"b{i}",
            "benchmark": "iibench",
            "task": "mcq",
            "category": "life",
            "question": f"Question number {i}: what is implied?",
            "options": [f"option {k} of {i}" for k in range(6)],
            "option_types": None,
            "answer": "C",
            "media_paths": ["media/b.jpg"],
            "source_item_id": f"s{i}",
            "labels": "{}",
            "extra": "{}",
        }
        for i in range(n)
    ]


def run(n: int, latency: float, concurrency: int, seq_n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp, LLMDouble(latency=latency) as double:
        data = Path(tmp)
        double.responder = lambda body: "Answer: (C)"
        spec = ModelSpec(name="bench", model="bench-model", base_url=double.base_url, api_key_env=None)
        setting = Setting(benchmark="iibench", name="none", input="image", prompt="iibench_none.yaml")
        prompts = {"iibench_none.yaml": load_prompt(get("iibench").eval.prompts_dir / "iibench_none.yaml")}
        recs = items(n, data)

        def once(conc: int, subset: list[dict], cache: Path) -> tuple[float, list[dict]]:
            import os

            os.environ["BENCH_KEY"] = "sk-bench"
            engine = model_engine(
                ModelSpec(**{**spec.__dict__, "api_key_env": "BENCH_KEY"}),
                EngineSettings(max_concurrency=conc, timeout_s=30),
                cache,
            )
            reqs, _ = build_requests(get("iibench"), setting, subset, prompts, spec, data)
            t0 = time.perf_counter()
            res = engine.run("iibench_eval", "bench", [r.request for r in reqs])
            rows = prediction_rows("bench", get("iibench"), setting, {}, reqs, res)
            return time.perf_counter() - t0, rows

        wall, rows = once(concurrency, recs, data / "c1.sqlite")
        ok = sum(r["correct"] for r in rows)
        lat = sorted(r["latency_s"] for r in rows)
        print(
            f"concurrent ({concurrency} in flight, {latency * 1000:.0f} ms server latency): {n} requests in "
            f"{wall:.2f} s = {n / wall:.1f} req/s; correct {ok}/{n}; latency p50 {lat[len(lat) // 2]:.3f} s, "
            f"p95 {lat[int(len(lat) * 0.95)]:.3f} s; peak in flight at server {double.max_in_flight}"
        )
        seq_wall, _ = once(1, recs[:seq_n], data / "c2.sqlite")
        per = seq_wall / seq_n
        print(
            f"sequential (1 in flight): {seq_n} requests in {seq_wall:.2f} s = {1 / per:.1f} req/s; "
            f"extrapolated {n} requests: {per * n:.1f} s → speed-up ×{per * n / wall:.1f}"
        )
        cached_wall, _ = once(concurrency, recs, data / "c1.sqlite")
        print(f"cached re-run: {n} requests in {cached_wall:.2f} s = {n / cached_wall:.0f} req/s (0 HTTP calls)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--seq", type=int, default=20)
    a = ap.parse_args()
    run(a.n, a.latency, a.concurrency, a.seq)
