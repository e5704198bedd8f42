"""An OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It speaks the real protocol, so tests drive the real ``openai`` client through it:
``/v1/chat/completions`` (text and image parts, ``response_format`` json_schema /
json_object, ``usage``, ``x-ratelimit-*`` headers), ``/v1/files`` + ``/v1/batches`` (the
Batch API), ``/v1/audio/transcriptions`` (answers ``double.transcript``, where ``{bytes}``
becomes the uploaded file's size; ``double.audio_replies`` queues ``Reply`` faults or texts)
and ``/v1/models``.

Scripting, in priority order for each chat request:

1. ``double.script(reply, ..., match="prompt_name or text")``: queued replies, consumed in
   order by requests whose schema name equals ``match`` or whose messages contain it
   (``match=None``: any request);
2. ``double.responder = fn(request_json) -> Reply | dict | str | None`` (None: fall through);
3. default: a schema-valid placeholder built from the request's json_schema (``{}`` in
   json_object mode, ``"ok"`` for text).

A ``Reply`` injects faults: ``Reply.rate_limited(retry_after)``, ``Reply.error(500)``,
``Reply.timeout(s)`` (sleeps past the client's timeout), ``Reply.hang()`` (never answers),
``Reply.text("{not json")``,
``Reply.json({...})`` (anything, schema-valid or not), ``delay=`` extra latency.
Every request is recorded in ``double.requests``; ``double.max_in_flight`` is the peak
number of chat requests handled at once. A responder that raises answers HTTP 500 and its error
is kept in ``double.responder_errors``: the ``llm_double`` fixture fails the test on any (a fault
a test means to inject is a ``Reply``; a raised one is a broken script the client would only retry).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from forge.llm.stub import placeholder


@dataclass
class Reply:
    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    error_message: str = ""
    finish_reason: str = "stop"
    raw_body: str | None = None  # send this body verbatim (a broken HTTP response)
    hangs: bool = False  # counted in ``hung``; no reply unless the client waits ``delay``

    @classmethod
    def json(cls, obj: Any, **kw: Any) -> Reply:
        return cls(content=json.dumps(obj), **kw)

    @classmethod
    def text(cls, text: str, **kw: Any) -> Reply:
        return cls(content=text, **kw)

    @classmethod
    def error(cls, status: int = 500, message: str = "internal error", retry_after: float | None = None) -> Reply:
        headers = {"retry-after": f"{retry_after:g}"} if retry_after is not None else {}
        return cls(status=status, error_message=message, headers=headers)

    @classmethod
    def rate_limited(cls, retry_after: float = 0.2) -> Reply:
        return cls.error(429, "Rate limit reached", retry_after)

    @classmethod
    def timeout(cls, seconds: float = 5.0) -> Reply:
        return cls(content="{}", delay=seconds)

    @classmethod
    def hang(cls, seconds: float = 3600.0) -> Reply:
        """Accept the request and send nothing (a stuck upstream) until the client gives up."""
        return cls(content="{}", delay=seconds, hangs=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def message_text(body: dict[str, Any]) -> str:
    parts = []
    for m in body.get("messages", []):
        c = m.get("content")
        if isinstance(c, str):
            parts.append(c)
        elif isinstance(c, list):
            parts += [p.get("text", "") for p in c if p.get("type") == "text"]
    return "\n".join(parts)


def image_urls(body: dict[str, Any]) -> list[str]:
    return [
        p["image_url"]["url"]
        for m in body.get("messages", [])
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]


class LLMDouble:
    def __init__(
        self,
        latency: float = 0.0,
        supports_json_schema: bool = True,
        rate_headers: dict[str, str] | None = None,
        batch_polls: int = 1,
        record_bodies: bool = True,
    ):
        self.latency = latency
        self.supports_json_schema = supports_json_schema
        self.rate_headers = (
            rate_headers
            if rate_headers is not None
            else {
                "x-ratelimit-limit-requests": "100000",
                "x-ratelimit-remaining-requests": "99999",
                "x-ratelimit-reset-requests": "1ms",
                "x-ratelimit-limit-tokens": "100000000",
                "x-ratelimit-remaining-tokens": "99999999",
                "x-ratelimit-reset-tokens": "1ms",
            }
        )
        self.batch_polls = batch_polls  # GETs of a batch before it reports completed
        self.batch_expire_lines = 0  # the next batch leaves its first N lines unanswered (expired)
        self.record_bodies = record_bodies
        self.responder: Callable[[dict[str, Any]], Any] | None = None
        self.responder_errors: list[str] = []
        self.transcript = "[double] transcript"  # "{bytes}" is replaced by the uploaded file's size
        self.audio_replies: deque[Reply] = deque()  # queued transcription replies (faults, texts)
        self.requests: list[dict[str, Any]] = []
        # Chat replies actually sent with status 200: (x-client-request-id, prompt_tokens, completion_tokens);
        # what a paid endpoint bills. ``hung``: requests that got Reply.hang.
        self.served: list[tuple[str | None, int, int]] = []
        self.hung = 0
        self.in_flight = self.max_in_flight = 0
        self._scripts: list[tuple[str | None, deque[Any]]] = []
        self._files: dict[str, bytes] = {}
        self._batches: dict[str, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self.port = _free_port()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None

    # -- control ---------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def script(self, *replies: Any, match: str | None = None) -> LLMDouble:
        with self._lock:
            for m, q in self._scripts:
                if m == match:
                    q.extend(replies)
                    return self
            self._scripts.append((match, deque(replies)))
        return self

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.served.clear()
            self._scripts.clear()
            self.audio_replies.clear()
            self.max_in_flight = self.hung = 0
            self.responder_errors.clear()
        self.responder = None

    @property
    def transcription_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].endswith("/audio/transcriptions")]

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        return [r["body"] for r in self.requests if r["path"].endswith("/chat/completions")]

    def start(self) -> LLMDouble:
        ready = threading.Event()

        def serve() -> None:
            self._loop = asyncio.new_event_loop()
            asyncio.set_event_loop(self._loop)
            app = web.Application(client_max_size=256 * 1024 * 1024)
            app.router.add_post("/v1/chat/completions", self._chat)
            app.router.add_post("/v1/files", self._upload)
            app.router.add_get("/v1/files/{fid}/content", self._file_content)
            app.router.add_get("/v1/files/{fid}", self._file_meta)
            app.router.add_post("/v1/batches", self._batch_create)
            app.router.add_get("/v1/batches/{bid}", self._batch_get)
            app.router.add_post("/v1/batches/{bid}/cancel", self._batch_cancel)
            app.router.add_post("/v1/audio/transcriptions", self._transcribe)
            app.router.add_get("/v1/models", self._models)
            # a hung request never finishes: don't wait for it at shutdown
            self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
            self._loop.run_until_complete(self._runner.setup())
            site = web.TCPSite(self._runner, "127.0.0.1", self.port, backlog=1024)
            self._loop.run_until_complete(site.start())
            ready.set()
            self._loop.run_forever()
            self._loop.run_until_complete(self._runner.cleanup())
            left = asyncio.all_tasks(self._loop)  # handlers of hung requests: cancelled, not destroyed
            for task in left:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*left, return_exceptions=True))
            self._loop.close()

        self._thread = threading.Thread(target=serve, daemon=True, name="llm-double")
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("LLM double did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(10)

    def __enter__(self) -> LLMDouble:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- chat --------------------------------------------------------------------------
    def _pick(self, body: dict[str, Any]) -> Any:
        rf = body.get("response_format") or {}
        name = (rf.get("json_schema") or {}).get("name")
        text = None
        with self._lock:
            for match, q in self._scripts:
                if not q:
                    continue
                if match is None or match == name:
                    return q.popleft()
                text = message_text(body) if text is None else text
                if match in text:
                    return q.popleft()
        if self.responder is not None:
            try:
                out = self.responder(body)
            except Exception as exc:
                self.responder_errors.append(f"{type(exc).__name__}: {exc}")
                raise
            if out is not None:
                return out
        if rf.get("type") == "json_schema":
            schema = rf["json_schema"].get("schema")
            return Reply.json(placeholder(schema, json.dumps(body.get("messages"), sort_keys=True)[:4096]))
        if rf.get("type") == "json_object":
            return Reply.text("{}")
        return Reply.text("ok")

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        with self._lock:
            self.requests.append(
                {
                    "path": request.path,
                    "body": body if self.record_bodies else {},
                    "headers": {
                        k.lower(): v
                        for k, v in request.headers.items()
                        if k.lower() in ("authorization", "content-type", "x-client-request-id")
                    },
                    "t": time.time(),
                }
            )
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            rf = body.get("response_format") or {}
            if rf.get("type") == "json_schema" and not self.supports_json_schema:
                return self._error(400, "response_format json_schema is not supported by this server", {})
            reply = self._pick(body)
            if isinstance(reply, dict):
                reply = Reply.json(reply)
            elif isinstance(reply, str):
                reply = Reply.text(reply)
            if reply.hangs:
                with self._lock:
                    self.hung += 1
            await asyncio.sleep(self.latency + reply.delay)
            if reply.status != 200:
                return self._error(reply.status, reply.error_message, reply.headers)
            if reply.raw_body is not None:
                return web.Response(text=reply.raw_body, content_type="application/json")
            completion = self._completion(body, reply)
            with self._lock:
                self.served.append(
                    (
                        request.headers.get("x-client-request-id"),
                        completion["usage"]["prompt_tokens"],
                        completion["usage"]["completion_tokens"],
                    )
                )
            return web.json_response(completion, headers={**self.rate_headers, **reply.headers})
        finally:
            with self._lock:
                self.in_flight -= 1

    def _completion(self, body: dict[str, Any], reply: Reply) -> dict[str, Any]:
        content = reply.content or ""
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "double"),
            "choices": [
                {"index": 0, "finish_reason": reply.finish_reason, "message": {"role": "assistant", "content": content}}
            ],
            "usage": {
                "prompt_tokens": max(1, len(message_text(body)) // 4) + 85 * len(image_urls(body)),
                "completion_tokens": max(1, len(content) // 4),
                "total_tokens": 0,
            },
        }

    @staticmethod
    def _error(status: int, message: str, headers: dict[str, str]) -> web.Response:
        return web.json_response(
            {"error": {"message": message, "type": "double_error", "code": status}}, status=status, headers=headers
        )

    # -- files & batches -----------------------------------------------------------------
    async def _upload(self, request: web.Request) -> web.Response:
        data = await request.post()
        f = data["file"]
        content = f.file.read() if hasattr(f, "file") else bytes(f)
        fid = f"file-{next(self._ids)}"
        self._files[fid] = content
        self.requests.append({"path": request.path, "body": {"purpose": data.get("purpose"), "bytes": len(content)}})
        return web.json_response(self._file_obj(fid, data.get("purpose", "batch")))

    def _file_obj(self, fid: str, purpose: str = "batch") -> dict[str, Any]:
        return {
            "id": fid,
            "object": "file",
            "bytes": len(self._files[fid]),
            "created_at": int(time.time()),
            "filename": f"{fid}.jsonl",
            "purpose": purpose,
            "status": "processed",
        }

    async def _file_meta(self, request: web.Request) -> web.Response:
        fid = request.match_info["fid"]
        if fid not in self._files:
            return self._error(404, "no such file", {})
        return web.json_response(self._file_obj(fid))

    async def _file_content(self, request: web.Request) -> web.Response:
        fid = request.match_info["fid"]
        if fid not in self._files:
            return self._error(404, "no such file", {})
        return web.Response(body=self._files[fid], content_type="application/octet-stream")

    async def _batch_create(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append({"path": request.path, "body": body})
        if body.get("input_file_id") not in self._files:
            return self._error(400, "input file not found", {})
        bid = f"batch_{next(self._ids)}"
        self._batches[bid] = {
            "id": bid,
            "object": "batch",
            "endpoint": body.get("endpoint"),
            "input_file_id": body["input_file_id"],
            "completion_window": body.get("completion_window"),
            "status": "validating",
            "created_at": int(time.time()),
            "output_file_id": None,
            "error_file_id": None,
            "polls": 0,
            "expire": self.batch_expire_lines,
            "request_counts": {"total": 0, "completed": 0, "failed": 0},
        }
        self.batch_expire_lines = 0
        return web.json_response(self._batch_obj(bid))

    def _batch_obj(self, bid: str) -> dict[str, Any]:
        return {k: v for k, v in self._batches[bid].items() if k not in ("polls", "expire")}

    async def _batch_get(self, request: web.Request) -> web.Response:
        bid = request.match_info["bid"]
        b = self._batches.get(bid)
        if b is None:
            return self._error(404, "no such batch", {})
        self.requests.append({"path": request.path, "body": {}})
        b["polls"] += 1
        if b["status"] in ("validating", "in_progress") and b["polls"] >= self.batch_polls:
            await self._run_batch(b)
        elif b["status"] == "validating":
            b["status"] = "in_progress"
        return web.json_response(self._batch_obj(bid))

    async def _batch_cancel(self, request: web.Request) -> web.Response:
        bid = request.match_info["bid"]
        self._batches[bid]["status"] = "cancelled"
        return web.json_response(self._batch_obj(bid))

    async def _run_batch(self, b: dict[str, Any]) -> None:
        out, err = [], []
        lines = [json.loads(x) for x in self._files[b["input_file_id"]].decode().splitlines() if x.strip()]
        skipped = {ln["custom_id"] for ln in lines[: b["expire"]]}
        for line in lines:
            cid = line["custom_id"]
            if cid in skipped:
                continue  # left unprocessed: the client must resubmit it
            body = line["body"]
            reply = self._pick(body)
            reply = (
                Reply.json(reply) if isinstance(reply, dict) else Reply.text(reply) if isinstance(reply, str) else reply
            )
            if reply.status != 200:
                err.append(
                    {
                        "id": f"req_{next(self._ids)}",
                        "custom_id": cid,
                        "response": {"status_code": reply.status, "body": {"error": {"message": reply.error_message}}},
                        "error": None,
                    }
                )
            else:
                out.append(
                    {
                        "id": f"req_{next(self._ids)}",
                        "custom_id": cid,
                        "response": {"status_code": 200, "request_id": "r", "body": self._completion(body, reply)},
                        "error": None,
                    }
                )
        self.requests += [
            {"path": "/v1/batches#line", "body": ln["body"]} for ln in lines if ln["custom_id"] not in skipped
        ]
        b["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(err)}
        if out:
            fid = f"file-{next(self._ids)}"
            self._files[fid] = "\n".join(json.dumps(x) for x in out).encode()
            b["output_file_id"] = fid
        if err:
            fid = f"file-{next(self._ids)}"
            self._files[fid] = "\n".join(json.dumps(x) for x in err).encode()
            b["error_file_id"] = fid
        b["status"] = "expired" if b["expire"] else "completed"

    # -- audio & models --------------------------------------------------------------------
    async def _transcribe(self, request: web.Request) -> web.Response:
        data = await request.post()
        f = data.get("file")
        content = f.file.read() if hasattr(f, "file") else b""
        with self._lock:
            self.requests.append(
                {
                    "path": request.path,
                    "body": {
                        "model": data.get("model"),
                        "bytes": len(content),
                        "filename": getattr(f, "filename", None),
                        "language": data.get("language"),
                        "response_format": data.get("response_format"),
                    },
                    "headers": {
                        k.lower(): v for k, v in request.headers.items() if k.lower() in ("x-client-request-id",)
                    },
                    "t": time.time(),
                }
            )
            reply = self.audio_replies.popleft() if self.audio_replies else None
        if reply is not None:
            await asyncio.sleep(reply.delay)
            if reply.status != 200:
                return self._error(reply.status, reply.error_message, reply.headers)
        text = reply.content if reply is not None and reply.content is not None else self.transcript
        # "{bytes}" in the text echoes the uploaded file's size (tests see what was sent)
        return web.json_response({"text": text.replace("{bytes}", str(len(content)))}, headers=self.rate_headers)

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "double", "object": "model", "owned_by": "test"}]})


def double_resource(double: LLMDouble, cache_path: str, **overrides: Any) -> Any:
    """An ``LLMResource`` pointing at ``double`` (fast retries, for tests). Adaptive hedging is off:
    on a loaded machine (two test workers on two cores) a slow scripted reply would be sent twice
    and its copy would take the next scripted reply; the tests of hedging turn it on."""
    from resources.llm import LLMResource

    cfg: dict[str, Any] = {
        "backend": "openai",
        "base_url": double.base_url,
        "api_key": "sk-test-double-secret",
        "model": "double-model",
        "cache_path": str(cache_path),
        "timeout_s": 5.0,
        "hedge": False,
    }
    cfg.update(overrides)
    return LLMResource(**cfg)
