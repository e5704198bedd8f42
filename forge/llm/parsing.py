"""Requests and replies: rendering, cache keys, reply parsing and validation, the repair turns."""

from __future__ import annotations

import json
import re
import time
import uuid
from typing import Any

from forge.llm.accounting import CallRecord, reply_latency
from forge.llm.backends import BackendError, Reply
from forge.llm.cache import cache_key
from forge.llm.prompts import Prompt, user_parts
from forge.llm.settings import DEFAULT_REPAIRS
from forge.llm.types import LLMRequest, LLMResult, Prepared

# Bump when reply parsing/validation changes: it is part of every cache key.
PARSER_VERSION = "1"


class ReplyError(ValueError):
    """A reply that is not valid JSON or does not satisfy the schema."""

    def __init__(self, message: str, error_class: str):
        super().__init__(message)
        self.error_class = error_class


_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


def parse_reply(text: str, schema: dict[str, Any] | None, validator: Any = None) -> dict[str, Any]:
    """Parsed JSON satisfying ``schema`` (``{"text": ...}`` when the prompt has no schema)."""
    if schema is None:
        if not text or not text.strip():
            raise ReplyError("empty reply", "EmptyReply")
        return {"text": text}
    m = _FENCE.match(text or "")
    body = m.group(1) if m else (text or "")
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        raise ReplyError(f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}", "JSONDecodeError") from exc
    if validator is None:
        import jsonschema

        validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(data), key=lambda e: (len(e.path), e.message))
    if errors:
        e = errors[0]
        where = "/".join(str(p) for p in e.path) or "(root)"
        more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
        raise ReplyError(f"schema: at {where}: {e.message}{more}", "SchemaError")
    if not isinstance(data, dict):
        data = {"value": data}
    return data


def repair_turn(text: str, exc: ReplyError) -> list[dict[str, Any]]:
    """The turns that ask for a repair: the latest reply and what was wrong with it (earlier failed
    turns are dropped, so the context does not grow with each repair)."""
    return [
        {"role": "assistant", "content": text},
        {
            "role": "user",
            "content": (
                f"Your reply could not be used: {exc}. Reply again with only a JSON object that "
                "satisfies the required schema, with no other text."
            ),
        },
    ]


class ParsingMixin:
    """Preparing requests, validating replies and repairing invalid ones."""

    # -- preparation -------------------------------------------------------------------
    def prepare(self, stage: str, req: LLMRequest) -> Prepared:
        """Resolve model and params, render text messages and compute the cache key."""
        prompt: Prompt = req.prompt
        s = self.settings
        model = str(s.stage(stage, "model"))
        params = {**s.default_params, **prompt.params, **s.stage(stage, "params", {}), **req.params}
        messages = prompt.render(req.variables) + list(req.extra_messages)
        key_messages = [dict(m) for m in messages]
        if req.images:
            image_keys = [self.images.key(i) for i in req.images]
            where = {"images_first": True} if req.images_first else {}  # images after the text: keys as before
            key_messages.append({"role": "images", "content": image_keys, **where})
        key = cache_key(
            {
                "endpoint": self.endpoint,
                "backend": self.backend.name,
                "model": model,
                "messages": key_messages,
                "params": params,
                "schema": prompt.schema,
                "strict": prompt.strict,
                "parser": PARSER_VERSION,
            }
        )
        return Prepared(req=req, prompt=prompt, model=model, params=params, base_messages=messages, key=key)

    def _wire_messages(self, prep: Prepared, tail: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Messages as sent: images attached to the last user turn; schema spelled out in json_object mode."""
        msgs = [dict(m) for m in prep.base_messages]
        if prep.req.images:
            idx = max(i for i, m in enumerate(msgs) if m["role"] == "user")
            text = msgs[idx]["content"]
            parts = text if isinstance(text, list) else [{"type": "text", "text": text}]
            images = [self.images.part(i) for i in prep.req.images]
            msgs[idx] = {"role": "user", "content": user_parts(parts, images, prep.req.images_first)}
        if prep.prompt.schema is not None and self._mode == "json_object":
            note = "Reply with one JSON object only, satisfying this JSON Schema:\n" + json.dumps(
                prep.prompt.schema, ensure_ascii=False
            )
            if msgs and msgs[0]["role"] == "system":
                msgs[0] = {"role": "system", "content": f"{msgs[0]['content']}\n\n{note}"}
            else:
                msgs.insert(0, {"role": "system", "content": note})
        return msgs + tail

    def _response_format(self, prompt: Prompt) -> dict[str, Any] | None:
        if prompt.schema is None:
            return None
        if self._mode == "json_object":
            return {"type": "json_object"}
        return {
            "type": "json_schema",
            "json_schema": {"name": prompt.schema_name, "schema": prompt.schema, "strict": prompt.strict},
        }

    def _validator(self, prompt: Prompt) -> Any:
        if prompt.schema is None:
            return None
        v = self._validators.get(prompt.hash)
        if v is None:
            import jsonschema

            v = self._validators[prompt.hash] = jsonschema.Draft202012Validator(prompt.schema)
        return v

    def repair_budget(self, stage: str, error_class: str) -> int:
        if not self.settings.repair or self.settings.verbatim:
            return 0
        budgets = {**DEFAULT_REPAIRS, **self.settings.stage(stage, "repair_budgets")}
        return int(budgets.get(error_class, 1))

    def lookup(self, stage: str, partition: str, req: LLMRequest, mode: str = "online") -> Prepared | LLMResult:
        """The request prepared for sending, or its result when nothing needs sending: a cache hit,
        or a request that cannot be prepared (missing variable, unreadable image), which fails alone."""
        try:
            prep = self.prepare(stage, req)
        except Exception as exc:  # noqa: BLE001 - a bad request fails alone, never the batch
            model = self.model_for(stage)
            error, error_class = f"prepare: {exc}", type(exc).__name__
            self.accounts.record(
                CallRecord(stage, partition, req, model, 0, "failed", error=error, error_class=error_class, mode=mode)
            )
            return self.accounts.result(None, req, ok=False, error=error, error_class=error_class, model=model)
        hit = self.cache.get(prep.key)
        if hit is None:
            return prep
        self.accounts.record(CallRecord.of(stage, partition, prep, 0, "cache_hit", cache_hit=True, mode=mode))
        if mode == "online":  # the batch path logs its hits in llm_calls only
            self.accounts.ledger_row(
                stage, partition, prep, request_id=f"hit-{uuid.uuid4().hex}", kind="cache_hit", status="ok"
            )
        return self.accounts.result(prep, req, ok=True, data=hit["data"], text=hit.get("text"), cached=True)

    async def _process(self, stage: str, partition: str, req: LLMRequest) -> LLMResult:
        found = self.lookup(stage, partition, req)
        if isinstance(found, LLMResult):
            return found
        return await self._call_and_parse(stage, partition, found)

    def _parse(self, reply: Reply, prompt: Prompt) -> dict[str, Any]:
        """A reply's data, or ReplyError (a repair turn's reason)."""
        if self.settings.verbatim and prompt.schema is None:
            return {"text": reply.text or ""}  # an empty or cut-off reply is the model's answer
        if reply.finish_reason == "length":
            raise ReplyError("reply truncated (finish_reason=length)", "Truncated")
        return parse_reply(reply.text, prompt.schema, self._validator(prompt))

    def _ledger_batch_reply(self, stage: str, partition: str, prep: Prepared, reply: Reply) -> None:
        """The ledger row of a reply that came in a batch (its call was not sent by this process)."""
        self.accounts.ledger_row(
            stage,
            partition,
            prep,
            request_id=reply.request_id or f"batch-{uuid.uuid4().hex}",
            kind="batch",
            status="ok",
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_s=reply_latency(reply),
            response_id=reply.response_id,
            model=reply.model or prep.model,
        )

    async def _call_and_parse(
        self, stage: str, partition: str, prep: Prepared, first_reply: Reply | None = None, mode: str = "online"
    ) -> LLMResult:
        """Send (or take ``first_reply``, e.g. from a batch), validate, repair within budget, cache."""
        req, prompt = prep.req, prep.prompt
        tail: list[dict[str, Any]] = []
        attempt = 0
        tin = tout = 0
        t_start = time.perf_counter()
        repairs: dict[str, int] = {}
        while True:
            try:
                if first_reply is not None:
                    reply, attempt, first_reply = first_reply, attempt + 1, None
                    self._ledger_batch_reply(stage, partition, prep, reply)
                else:
                    reply, attempt = await self._send(stage, partition, prep, tail, attempt)
                    mode = "online"
            except BackendError as exc:
                attempt = getattr(exc, "attempt", attempt)
                if exc.kind == "empty" and self.settings.verbatim and prompt.schema is None:
                    # A reply without content (a refusal) came back: under evaluation it is an empty
                    # answer. Its tokens are already on the attempt's own call row.
                    reply = Reply("", 0, 0, "empty")
                else:
                    return self.accounts.result(
                        prep,
                        req,
                        ok=False,
                        error=str(exc),
                        error_class=f"Backend:{exc.kind or 'error'}",
                        attempts=attempt,
                        tokens_in=tin,
                        tokens_out=tout,
                        latency_s=time.perf_counter() - t_start,
                    )
            tin, tout = tin + reply.tokens_in, tout + reply.tokens_out
            try:
                data = self._parse(reply, prompt)
            except ReplyError as exc:
                used = repairs.get(exc.error_class, 0)
                last = used >= self.repair_budget(stage, exc.error_class)
                self.accounts.record(
                    CallRecord.of_reply(
                        stage,
                        partition,
                        prep,
                        attempt,
                        "failed" if last else "invalid",
                        reply,
                        error=str(exc),
                        error_class=exc.error_class,
                        mode=mode,
                    )
                )
                if last:
                    return self.accounts.result(
                        prep,
                        req,
                        ok=False,
                        text=reply.text,
                        error=f"{exc} (after repair)" if sum(repairs.values()) else str(exc),
                        error_class=exc.error_class,
                        attempts=attempt,
                        tokens_in=tin,
                        tokens_out=tout,
                        latency_s=time.perf_counter() - t_start,
                    )
                repairs[exc.error_class] = used + 1
                tail = repair_turn(reply.text, exc)
                continue
            self.accounts.record(
                CallRecord.of_reply(
                    stage,
                    partition,
                    prep,
                    attempt,
                    "ok",
                    reply,
                    mode=mode,
                )
            )
            self.cache.put(
                prep.key,
                {
                    "data": data,
                    "text": reply.text,
                    "tokens_in": tin,
                    "tokens_out": tout,
                    "model": reply.model or prep.model,
                },
                model=prep.model,
                prompt_name=prompt.name,
            )
            return self.accounts.result(
                prep,
                req,
                ok=True,
                data=data,
                text=reply.text,
                attempts=attempt,
                tokens_in=tin,
                tokens_out=tout,
                latency_s=time.perf_counter() - t_start,
            )
