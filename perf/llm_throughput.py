"""LLM engine throughput: 2,000 requests against the double at 200 ms latency, 64 in flight.

Prints wall time vs the ideal (2000 / 64 × 0.2 s = 6.25 s), vs sequential calls
(extrapolated from a subset run with concurrency 1), and the same run fully cached.
Usage: .venv/bin/python perf/llm_throughput.py [N] [CONCURRENCY] [LATENCY_S]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forge.llm import LLMRequest, load_prompt
from tests.llm_double import LLMDouble, double_resource

PROMPT = """\
name: bench
variables: [text]
system: You label texts.
user: "Text: {{text}}"
schema:
  type: object
  required: [label, reason]
  properties:
    label: {enum: [irony, metaphor, literal]}
    reason: {type: string}
"""


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    conc = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    latency = float(sys.argv[3]) if len(sys.argv) > 3 else 0.2
    seq_n = 25
    with tempfile.TemporaryDirectory() as tmp, LLMDouble(latency=latency, record_bodies=False) as double:
        (Path(tmp) / "bench.yaml").write_text(PROMPT)
        prompt = load_prompt(Path(tmp) / "bench.yaml")
        reqs = [LLMRequest(item_id=f"i{i}", prompt=prompt, variables={"text": f"text number {i}"}) for i in range(n)]

        seq_engine = double_resource(double, str(Path(tmp) / "seq.sqlite"), max_concurrency=1).engine()
        t0 = time.perf_counter()
        seq_engine.run(
            "bench",
            "seq",
            [LLMRequest(item_id=f"s{i}", prompt=prompt, variables={"text": f"seq {i}"}) for i in range(seq_n)],
        )
        seq_per = (time.perf_counter() - t0) / seq_n

        engine = double_resource(double, str(Path(tmp) / "cache.sqlite"), max_concurrency=conc).engine()
        double.requests.clear()
        t0 = time.perf_counter()
        res = engine.run("bench", "b", reqs)
        wall = time.perf_counter() - t0
        ok = sum(r.ok for r in res)
        sent = len(double.requests)

        engine2 = double_resource(double, str(Path(tmp) / "cache.sqlite"), max_concurrency=conc).engine()
        t0 = time.perf_counter()
        res2 = engine2.run("bench", "b", reqs)
        cached_wall = time.perf_counter() - t0

    ideal = n / conc * latency
    print(f"requests={n} concurrency={conc} latency={latency}s")
    print(f"ok={ok} http_requests={sent} max_in_flight_at_server={double.max_in_flight}")
    print(f"concurrent wall: {wall:.2f} s   ideal: {ideal:.2f} s   x ideal: {wall / ideal:.2f}")
    print(
        f"sequential: {seq_per * 1000:.0f} ms/request -> {seq_per * n:.0f} s extrapolated for {n}  "
        f"(speed-up {seq_per * n / wall:.0f}x)"
    )
    print(
        f"fully cached re-run: {cached_wall:.2f} s, cache hits={sum(r.cached for r in res2)}, "
        f"new http requests={len(double.requests) - sent}"
    )


if __name__ == "__main__":
    main()
