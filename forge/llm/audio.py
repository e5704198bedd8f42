"""Audio: transcripts through the endpoint's ``audio.transcriptions``, on the chat calls' send path."""

from __future__ import annotations

import asyncio
import time
import uuid
from dataclasses import dataclass

from forge.llm.accounting import CallRecord
from forge.llm.backends import BackendError
from forge.llm.cache import cache_key
from forge.llm.parsing import PARSER_VERSION
from forge.llm.progress import _Progress
from forge.llm.types import AudioRequest, LLMRequest, LLMResult, Prepared
from forge.provenance.versioning import sha256_bytes


@dataclass(frozen=True)
class _TranscriptionPrompt:
    """What the call log and ledger read of a prompt, for transcription requests (no template)."""

    name: str = "audio_transcription"
    hash: str = ""
    schema: None = None
    strict: bool = False


TRANSCRIPTION = _TranscriptionPrompt()


class AudioMixin:
    """``transcribe``: the audio entry point."""

    # -- audio ---------------------------------------------------------------------------
    def transcribe(self, stage: str, partition: str, requests: list[AudioRequest]) -> list[LLMResult]:
        """Transcripts through the endpoint's ``audio.transcriptions``: one result per request, in
        order (``data = {"text": ...}``), with the chat calls' cache, retries, hedging, rate limits,
        call log and ledger. The stub backend answers a ``[stub]``-marked text, never speech."""
        return self.wait(self.atranscribe(stage, partition, requests))

    async def atranscribe(self, stage: str, partition: str, requests: list[AudioRequest]) -> list[LLMResult]:
        progress = _Progress(f"{stage} {partition}", len(requests))
        progress.status = self.status

        async def one(r: AudioRequest) -> LLMResult:
            res = await self._process_audio(stage, partition, r)
            progress.step()
            return res

        return list(await asyncio.gather(*(one(r) for r in requests)))

    def transcription_model(self, stage: str) -> str:
        return str(self.settings.stage(stage, "model", self.settings.transcription_model))

    def prepare_audio(self, stage: str, audio: AudioRequest) -> Prepared:
        """Model, params and cache key (audio content hash + model + endpoint + params)."""
        model = self.transcription_model(stage)
        # Chat defaults (max_tokens, response_format...) are not transcription arguments.
        params = {**self.settings.stage(stage, "params", {}), **audio.params}
        key = cache_key(
            {
                "kind": "audio_transcription",
                "endpoint": self.endpoint,
                "backend": self.backend.name,
                "model": model,
                "audio": sha256_bytes(audio.data),
                "params": params,
                "parser": PARSER_VERSION,
            }
        )
        req = LLMRequest(item_id=audio.item_id, prompt=TRANSCRIPTION)
        return Prepared(
            req=req, prompt=TRANSCRIPTION, model=model, params=params, base_messages=[], key=key, audio=audio
        )  # type: ignore[arg-type]

    async def _process_audio(self, stage: str, partition: str, audio: AudioRequest) -> LLMResult:
        prep = self.prepare_audio(stage, audio)
        req = prep.req
        hit = self.cache.get(prep.key)
        if hit is not None:
            self.accounts.record(CallRecord.of(stage, partition, prep, 0, "cache_hit", cache_hit=True))
            self.accounts.ledger_row(
                stage, partition, prep, request_id=f"hit-{uuid.uuid4().hex}", kind="cache_hit", status="ok"
            )
            return self.accounts.result(prep, req, ok=True, data=hit["data"], text=hit.get("text"), cached=True)
        t_start = time.perf_counter()
        try:
            reply, attempt = await self._send(stage, partition, prep, [], 0)
        except BackendError as exc:
            return self.accounts.result(
                prep,
                req,
                ok=False,
                error=str(exc),
                error_class=f"Backend:{exc.kind or 'error'}",
                attempts=getattr(exc, "attempt", 0),
                latency_s=time.perf_counter() - t_start,
            )
        cost = self.accounts.cost(prep.model, reply.tokens_in, reply.tokens_out, reply.audio_s)
        self.accounts.record(
            CallRecord.of_reply(
                stage,
                partition,
                prep,
                attempt,
                "ok",
                reply,
                cost=cost,
            )
        )
        data = {"text": reply.text.strip()}  # an empty text is an answer (no speech), cached like any
        self.cache.put(
            prep.key,
            {
                "data": data,
                "text": reply.text,
                "tokens_in": reply.tokens_in,
                "tokens_out": reply.tokens_out,
                "model": reply.model or prep.model,
                "audio_s": reply.audio_s,
            },
            model=prep.model,
            prompt_name=TRANSCRIPTION.name,
        )
        result = self.accounts.result(
            prep,
            req,
            ok=True,
            data=data,
            text=reply.text,
            attempts=attempt,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            latency_s=time.perf_counter() - t_start,
        )
        result.cost_usd = cost
        return result
