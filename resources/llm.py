"""The LLM resource: which endpoint, model, limits, prices and cache the engine uses.

``backend='auto'`` (the default) uses the OpenAI-compatible endpoint when ``base_url`` or
``OPENAI_API_KEY`` is configured and the offline ``stub`` otherwise, so the demo runs on a
fresh machine. The key is bound with ``dg.EnvVar`` and never logged or stored: rows and
metadata only name the backend and model.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from forge.llm.backends import OpenAIBackend, StubBackend
from forge.llm.cache import LLMCache
from forge.llm.engine import STAGE_KEYS, EngineSettings, LLMEngine
from forge.llm.ledger import SpendLedger, ledger_beside, ledger_path

# $ per 1M tokens (input, output); override in config with the prices you pay.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "gpt-4o-mini": {"input": 0.15, "output": 0.60},
    "gpt-4o": {"input": 2.50, "output": 10.00},
    "gpt-4.1-mini": {"input": 0.40, "output": 1.60},
    "gpt-4.1-nano": {"input": 0.10, "output": 0.40},
    "gpt-4.1": {"input": 2.00, "output": 8.00},
    "gpt-5-mini": {"input": 0.25, "output": 2.00},
    "gpt-5": {"input": 1.25, "output": 10.00},
    # transcription: whisper-1 by audio minute; the gpt-4o transcribe models by (audio) tokens
    "whisper-1": {"audio_minute": 0.006},
    "gpt-4o-transcribe": {"input": 6.00, "output": 10.00},
    "gpt-4o-mini-transcribe": {"input": 3.00, "output": 5.00},
}


class LLMResource(dg.ConfigurableResource):
    """OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server) or the offline stub."""

    backend: str = Field(
        default="auto", description="'openai' | 'stub' | 'auto' (openai when base_url or a key is set)"
    )
    base_url: str | None = Field(
        default=None, description="e.g. http://localhost:8000/v1 for vLLM; None = api.openai.com"
    )
    api_key: str | None = Field(default=None, description="bind with dg.EnvVar('OPENAI_API_KEY'); never logged")
    model: str = "gpt-4o-mini"
    transcription_model: str = Field(
        default="whisper-1",
        description="model for audio.transcriptions (the `transcripts` stage); a stage override's model wins",
    )
    stage_overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="stage → {model: ..., params: {temperature: ...}}"
    )
    default_params: dict[str, Any] = Field(
        default_factory=dict, description="params for every call (prompt params win)"
    )
    max_concurrency: int = 16
    rpm: int | None = None
    tpm: int | None = None
    provider: str | None = Field(
        default=None,
        description="endpoint identity for cache keys and the spend ledger "
        "(default: the base URL); two servers with the same model never share replies",
    )
    timeout_s: float = Field(default=60.0, description="total seconds for one request")
    connect_timeout_s: float = 10.0
    first_byte_timeout_s: float | None = Field(default=None, description="None = timeout_s")
    hedge: bool = Field(
        default=True,
        description="send a second copy of a stalled request (first reply wins); False: cancel it and retry at once",
    )
    hedge_after_s: float | None = Field(default=None, description="None = adaptive: hedge_factor × p90 latency")
    hedge_factor: float = 2.0
    hedge_min_s: float = 0.5
    hedge_initial_s: float = 20.0
    hedge_max_share: float = 0.1
    max_retries: int = 6
    retry_budgets: dict[str, int] = Field(
        default_factory=dict,
        description="retries per kind: rate_limit, server, timeout, connection, malformed (default max_retries each)",
    )
    repair_budgets: dict[str, int] = Field(
        default_factory=dict,
        description="repair turns per invalid reply class: JSONDecodeError, SchemaError, "
        "Truncated, EmptyReply (default 3, 3, 1, 2)",
    )
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    structured_output: str = Field(default="auto", description="auto | json_schema | json_object")
    prices: dict[str, dict[str, float]] = Field(
        default_factory=lambda: dict(DEFAULT_PRICES), description="model (or prefix) → {input, output} $ per 1M tokens"
    )
    image_max_side: int = 768
    image_quality: int = 85
    cache_path: str | None = Field(default=None, description="default <data_dir>/cache/llm_cache.sqlite")
    ledger_path: str | None = Field(
        default=None,
        description="spend ledger; default llm_ledger.sqlite beside the "
        "cache file (<data_dir>/cache/llm_ledger.sqlite)",
    )
    batch_stages: list[str] = Field(default_factory=list, description="stages sent through the OpenAI Batch API")
    batch_poll_s: float = 30.0
    batch_max_wait_s: float = 26 * 3600.0

    def resolved_backend(self) -> str:
        if self.backend != "auto":
            if self.backend not in ("openai", "stub"):
                raise ValueError(f"llm.backend must be openai, stub or auto, not {self.backend!r}")
            return self.backend
        return "openai" if (self.base_url or self.api_key) else "stub"

    def resolved_cache_path(self) -> Path:
        if self.cache_path:
            return Path(self.cache_path)
        return Path(os.environ.get("SUBTEXT_DATA_DIR", "data")) / "cache" / "llm_cache.sqlite"

    def resolved_ledger_path(self) -> Path:
        if self.ledger_path:
            return Path(self.ledger_path)
        return ledger_beside(self.resolved_cache_path()) or ledger_path()

    def settings(self) -> EngineSettings:
        unknown = {
            f"{st}.{k}"
            for st, o in self.stage_overrides.items()
            for k in (o or {})
            if k not in ("model", "params", *STAGE_KEYS)
        }
        if unknown:
            raise ValueError(
                f"llm.stage_overrides: unknown keys {sorted(unknown)}; allowed: model, params, {', '.join(STAGE_KEYS)}"
            )
        return EngineSettings(
            model=self.model,
            transcription_model=self.transcription_model,
            stage_overrides=dict(self.stage_overrides),
            default_params=dict(self.default_params),
            max_concurrency=self.max_concurrency,
            rpm=self.rpm,
            tpm=self.tpm,
            max_retries=self.max_retries,
            backoff_base_s=self.backoff_base_s,
            backoff_max_s=self.backoff_max_s,
            timeout_s=self.timeout_s,
            connect_timeout_s=self.connect_timeout_s,
            first_byte_timeout_s=self.first_byte_timeout_s,
            hedge=self.hedge,
            hedge_after_s=self.hedge_after_s,
            hedge_factor=self.hedge_factor,
            hedge_min_s=self.hedge_min_s,
            hedge_initial_s=self.hedge_initial_s,
            hedge_max_share=self.hedge_max_share,
            retry_budgets=dict(self.retry_budgets),
            repair_budgets=dict(self.repair_budgets),
            provider=self.provider or (self.base_url or None),
            structured_output=self.structured_output,
            image_max_side=self.image_max_side,
            image_quality=self.image_quality,
            batch_stages=tuple(self.batch_stages),
            batch_poll_s=self.batch_poll_s,
            batch_max_wait_s=self.batch_max_wait_s,
        )

    def engine(self) -> LLMEngine:
        """A fresh engine (own call log); the cache file is shared by every engine and process."""
        kind = self.resolved_backend()
        backend = (
            OpenAIBackend(self.base_url, self.api_key, timeout=self.timeout_s) if kind == "openai" else StubBackend()
        )
        return LLMEngine(
            backend,
            LLMCache(self.resolved_cache_path()),
            self.settings(),
            self.prices,
            ledger=SpendLedger(self.resolved_ledger_path()),
        )

    def describe(self) -> dict[str, Any]:
        """Safe-to-show configuration (no key)."""
        return {
            "backend": self.resolved_backend(),
            "model": self.model,
            "transcription_model": self.transcription_model,
            "base_url": self.base_url or "",
            "stage_overrides": {k: v.get("model", self.model) for k, v in self.stage_overrides.items()},
        }


# Deadlines and hedging from the environment: SUBTEXT_LLM_<FIELD> (e.g. SUBTEXT_LLM_TIMEOUT_S=30,
# SUBTEXT_LLM_HEDGE=0), per stage with SUBTEXT_LLM_STAGE_OVERRIDES='{"maia_foils": {"timeout_s": 20}}'.
ENV_FIELDS = {
    "provider": str,
    "timeout_s": float,
    "connect_timeout_s": float,
    "first_byte_timeout_s": float,
    "hedge": lambda v: v.strip().lower() not in ("0", "false", "no", "off", ""),
    "hedge_after_s": float,
    "hedge_factor": float,
    "max_retries": int,
    "max_concurrency": int,
}


def env_settings(environ: dict[str, str] | None = None) -> dict[str, Any]:
    env = os.environ if environ is None else environ
    out: dict[str, Any] = {}
    for name, conv in ENV_FIELDS.items():
        raw = env.get(f"SUBTEXT_LLM_{name.upper()}")
        if raw is not None and raw != "":
            try:
                out[name] = conv(raw)
            except ValueError as exc:
                raise ValueError(f"SUBTEXT_LLM_{name.upper()}={raw!r}: {exc}") from exc
    raw = env.get("SUBTEXT_LLM_STAGE_OVERRIDES")
    if raw:
        try:
            out["stage_overrides"] = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"SUBTEXT_LLM_STAGE_OVERRIDES is not JSON: {exc}") from exc
    return out


def default_llm() -> LLMResource:
    has_key = bool(os.environ.get("OPENAI_API_KEY"))
    return LLMResource(
        backend=os.environ.get("SUBTEXT_LLM_BACKEND", "auto"),
        base_url=os.environ.get("OPENAI_BASE_URL") or None,
        api_key=dg.EnvVar("OPENAI_API_KEY") if has_key else None,
        model=os.environ.get("SUBTEXT_LLM_MODEL", "gpt-4o-mini"),
        transcription_model=os.environ.get("SUBTEXT_LLM_TRANSCRIPTION_MODEL", "whisper-1"),
        **env_settings(),
    )


RESOURCES = {"llm": default_llm()}
