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
from forge.llm.cache import default_cache_path, open_cache
from forge.llm.engine import LLMEngine
from forge.llm.ledger import SpendLedger, ledger_beside, ledger_path
from forge.llm.settings import EngineSettings, LLMSettings

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


class LLMResource(dg.ConfigurableResource, LLMSettings):
    """OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server) or the offline stub.

    The engine's settings are the fields of ``forge.llm.settings.LLMSettings`` (inherited, one
    declaration); this class adds where requests go, what they cost and where replies are kept."""

    backend: str = Field(
        default="auto", description="'openai' | 'stub' | 'auto' (openai when base_url or a key is set)"
    )
    base_url: str | None = Field(
        default=None, description="e.g. http://localhost:8000/v1 for vLLM; None = api.openai.com"
    )
    api_key: str | None = Field(default=None, description="bind with dg.EnvVar('OPENAI_API_KEY'); never logged")
    prices: dict[str, dict[str, float]] = Field(
        default_factory=lambda: dict(DEFAULT_PRICES), description="model (or prefix) → {input, output} $ per 1M tokens"
    )
    cache_path: str | None = Field(default=None, description="default <data_dir>/cache/llm_cache.sqlite")
    ledger_path: str | None = Field(
        default=None,
        description="spend ledger; default llm_ledger.sqlite beside the "
        "cache file (<data_dir>/cache/llm_ledger.sqlite)",
    )

    def resolved_backend(self) -> str:
        if self.backend != "auto":
            if self.backend not in ("openai", "stub"):
                raise ValueError(f"llm.backend must be openai, stub or auto, not {self.backend!r}")
            return self.backend
        return "openai" if (self.base_url or self.api_key) else "stub"

    def resolved_cache_path(self) -> Path:
        if self.cache_path:
            return Path(self.cache_path)
        return default_cache_path()

    def resolved_ledger_path(self) -> Path:
        if self.ledger_path:
            return Path(self.ledger_path)
        return ledger_beside(self.resolved_cache_path()) or ledger_path()

    def settings(self) -> EngineSettings:
        """The engine's settings: this resource's ``LLMSettings`` fields, the provider defaulting to the base URL."""
        self.check_overrides()
        values = {name: getattr(self, name) for name in LLMSettings.model_fields}
        return EngineSettings(**{**values, "provider": self.provider or (self.base_url or None)})

    def engine(self) -> LLMEngine:
        """A fresh engine (own call log); the cache file is shared by every engine and process."""
        kind = self.resolved_backend()
        backend = (
            OpenAIBackend(self.base_url, self.api_key, timeout=self.timeout_s) if kind == "openai" else StubBackend()
        )
        return LLMEngine(
            backend,
            open_cache(self.resolved_cache_path()),
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
            "stage_overrides": {k: self.stage(k, "model") for k in self.stage_overrides},
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


def resources() -> dict[str, LLMResource]:
    return {"llm": default_llm()}
