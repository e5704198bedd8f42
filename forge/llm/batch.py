"""Batch mode: a stage's cache misses go through the OpenAI Batch API (half price, ≤24 h).

Flow for ``engine.run(stage, partition, requests)`` when ``stage`` is in
``settings.batch_stages``:

1. every request is prepared and looked up in the cache, exactly as online;
2. the misses become one JSONL file (``custom_id`` = the request's cache key), uploaded
   with ``files.create(purpose="batch")`` and submitted with ``batches.create``; the batch
   id and its keys are written at once to ``<cache dir>/batches/<stage>__<partition>.json``;
3. the batch is polled until it ends; each returned reply is validated like an online one
   (an invalid reply gets its one repair attempt online), valid ones are cached;
4. requests the batch did not answer (failed lines, expired or cancelled batch) are
   resubmitted in a new batch, up to ``batch_max_resubmits`` times, then rejected with
   the reason.

After a restart the state file is read first: batches still known are polled (never
submitted twice) and only keys no batch covers are submitted.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

from forge.llm.backends import Reply
from forge.llm.cache import LLMCache
from forge.llm.types import LLMRequest, LLMResult, Prepared
from forge.storage.tables import safe_name


class Engine(Protocol):
    """The engine's seam for this send path (``LLMEngine`` is one); the engine imports this module."""

    settings: Any  # EngineSettings
    cache: LLMCache
    backend: Any  # OpenAIBackend: ``client()`` is the AsyncOpenAI client

    def lookup(self, stage: str, partition: str, req: LLMRequest, mode: str = "online") -> Prepared | LLMResult: ...

    def chat_body(self, prep: Prepared) -> dict[str, Any]: ...

    async def accept(self, stage: str, partition: str, prep: Prepared, reply: Reply, mode: str) -> LLMResult: ...

    def fail_call(
        self, stage: str, partition: str, prep: Prepared, reason: str, error_class: str, attempts: int, mode: str
    ) -> LLMResult: ...


TERMINAL = ("completed", "failed", "expired", "cancelled")


def state_path(engine: Engine, stage: str, partition: str) -> Path:
    base = engine.cache.path.parent if engine.cache.path else Path(tempfile.gettempdir()) / "forge_llm"
    return base / "batches" / f"{safe_name(stage)}__{safe_name(partition)}.json"


def _load_state(path: Path) -> dict[str, Any]:
    if path.exists():
        return json.loads(path.read_text())
    return {"batches": {}}


def _save_state(path: Path, state: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(state, fh)
    os.replace(tmp, path)


def run_batch(engine: Engine, stage: str, partition: str, requests: list[LLMRequest]) -> list[LLMResult]:
    async def main() -> list[LLMResult]:
        try:
            return await arun_batch(engine, stage, partition, requests)
        finally:
            await engine.backend.aclose()

    return asyncio.run(main())


def _line(engine: Engine, prep: Prepared) -> dict[str, Any]:
    return {"custom_id": prep.key, "method": "POST", "url": "/v1/chat/completions", "body": engine.chat_body(prep)}


async def arun_batch(engine: Engine, stage: str, partition: str, requests: list[LLMRequest]) -> list[LLMResult]:
    s = engine.settings
    results: list[LLMResult | None] = [None] * len(requests)
    preps: dict[str, list[tuple[int, Prepared]]] = {}
    for i, req in enumerate(requests):
        found = engine.lookup(stage, partition, req, mode="batch")  # prepared, or failed / a cache hit
        if isinstance(found, LLMResult):
            results[i] = found
        else:
            preps.setdefault(found.key, []).append((i, found))

    client = engine.backend.client()  # type: ignore[attr-defined]
    spath = state_path(engine, stage, partition)
    state = _load_state(spath)
    # Forget batches whose keys are all answered already (e.g. cached by another run).
    state["batches"] = {b: v for b, v in state["batches"].items() if set(v["keys"]) & set(preps)}
    pending = set(preps)
    submissions: dict[str, int] = {k: 0 for k in preps}
    last_error: dict[str, str] = {}

    async def submit(keys: list[str]) -> None:
        lines = "\n".join(json.dumps(_line(engine, preps[k][0][1]), ensure_ascii=False) for k in keys)
        f = await client.files.create(file=(f"{safe_name(stage)}.jsonl", lines.encode()), purpose="batch")
        b = await client.batches.create(
            input_file_id=f.id,
            endpoint="/v1/chat/completions",
            completion_window=s.batch_completion_window,
            metadata={"stage": stage[:64], "partition": partition[:64]},
        )
        state["batches"][b.id] = {"keys": keys, "submitted_at": time.time()}
        _save_state(spath, state)  # the resume point: written before any polling
        for k in keys:
            submissions[k] += 1

    covered = {k for v in state["batches"].values() for k in v["keys"]}
    fresh = sorted(pending - covered)
    if fresh:
        await submit(fresh)

    t_start = time.monotonic()
    while state["batches"]:
        for bid in list(state["batches"]):
            b = await client.batches.retrieve(bid)
            if b.status not in TERMINAL:
                continue
            keys = state["batches"][bid]["keys"]
            answered: set[str] = set()
            waited = time.time() - state["batches"][bid]["submitted_at"]
            for fid in (b.output_file_id, b.error_file_id):
                if not fid:
                    continue
                content = await client.files.content(fid)
                for raw in content.text.splitlines():
                    if not raw.strip():
                        continue
                    line = json.loads(raw)
                    key = line.get("custom_id")
                    if key not in preps or key not in pending:
                        continue
                    resp = line.get("response") or {}
                    if resp.get("status_code") != 200:
                        err = (resp.get("body") or {}).get("error") or line.get("error") or {}
                        last_error[key] = f"batch line {resp.get('status_code')}: {err.get('message', err)}"
                        continue
                    body = resp["body"]
                    choice = body["choices"][0]
                    usage = body.get("usage") or {}
                    reply = Reply(
                        text=choice["message"].get("content") or "",
                        tokens_in=int(usage.get("prompt_tokens", 0)),
                        tokens_out=int(usage.get("completion_tokens", 0)),
                        finish_reason=choice.get("finish_reason"),
                        model=body.get("model", ""),
                    )
                    reply._latency = waited  # type: ignore[attr-defined]
                    answered.add(key)
                    for idx, prep in preps[key]:
                        # Validation, the online repair of an invalid reply, and caching: shared with online.
                        results[idx] = await engine.accept(stage, partition, prep, reply, mode="batch")
            pending -= answered
            for k in set(keys) - answered:
                last_error.setdefault(k, f"batch {bid} ended {b.status} without an answer")
            del state["batches"][bid]
            _save_state(spath, state)
            retry = sorted(k for k in set(keys) - answered if submissions[k] <= s.batch_max_resubmits)
            if retry:
                await submit(retry)
        if state["batches"]:
            if time.monotonic() - t_start > s.batch_max_wait_s:
                for k in {k for v in state["batches"].values() for k in v["keys"]}:
                    last_error[k] = "batch still running at batch_max_wait_s; re-run to resume"
                break  # state kept: the next run resumes these batches
            await asyncio.sleep(s.batch_poll_s)
    if not state["batches"] and spath.exists():
        spath.unlink()

    for key, items in preps.items():
        for idx, prep in items:
            if results[idx] is None:
                reason = last_error.get(key, "no answer from the batch")
                results[idx] = engine.fail_call(
                    stage, partition, prep, reason, "BatchError", submissions[key], mode="batch"
                )
    return [r for r in results if r is not None]
