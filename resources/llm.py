"""The LLM resource: which endpoint, model, limits, prices and cache the engine uses.

``backend='auto'`` (the default) uses the OpenAI-compatible endpoint when ``base_url`` or
``OPENAI_API_KEY`` is configured and the offline ``stub`` otherwise, so the demo runs on a
fresh machine. The key is bound with ``dg.EnvVar`` and never logged or stored: rows and
metadata only name the backend and model.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field

from forge.llm.backends import OpenAIBackend, StubBackend
from forge.llm.cache import LLMCache
from forge.llm.engine import EngineSettings, LLMEngine

# $ per 1M tokens (input, output); override in config with the prices you pay.
DEFAULT_PRICES: dict[str, dict[str, float]] = {
    "gpt-4o-mini": {"input": 0.15, "output": 0.60},
    "gpt-4o": {"input": 2.50, "output": 10.00},
    "gpt-4.1-mini": {"input": 0.40, "output": 1.60},
    "gpt-4.1-nano": {"input": 0.10, "output": 0.40},
    "gpt-4.1": {"input": 2.00, "output": 8.00},
    "gpt-5-mini": {"input": 0.25, "output": 2.00},
    "gpt-5": {"input": 1.25, "output": 10.00},
}


class LLMResource(dg.ConfigurableResource):
    """OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server) or the offline stub."""

    backend: str = Field(default="auto", description="'openai' | 'stub' | 'auto' (openai when base_url or a key is set)")
    base_url: str | None = Field(default=None, description="e.g. http://localhost:8000/v1 for vLLM; None = api.openai.com")
    api_key: str | None = Field(default=None, description="bind with dg.EnvVar('OPENAI_API_KEY'); never logged")
    model: str = "gpt-4o-mini"
    stage_overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="stage → {model: ..., params: {temperature: ...}}")
    default_params: dict[str, Any] = Field(default_factory=dict, description="params for every call (prompt params win)")
    max_concurrency: int = 16
    rpm: int | None = None
    tpm: int | None = None
    timeout_s: float = 60.0
    max_retries: int = 6
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    structured_output: str = Field(default="auto", description="auto | json_schema | json_object")
    prices: dict[str, dict[str, float]] = Field(
        default_factory=lambda: dict(DEFAULT_PRICES), description="model (or prefix) → {input, output} $ per 1M tokens")
    image_max_side: int = 768
    image_quality: int = 85
    cache_path: str | None = Field(default=None, description="default <data_dir>/cache/llm_cache.sqlite")
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

    def settings(self) -> EngineSettings:
        return EngineSettings(
            model=self.model, stage_overrides=dict(self.stage_overrides), default_params=dict(self.default_params),
            max_concurrency=self.max_concurrency, rpm=self.rpm, tpm=self.tpm, max_retries=self.max_retries,
            backoff_base_s=self.backoff_base_s, backoff_max_s=self.backoff_max_s,
            timeout_s=self.timeout_s, structured_output=self.structured_output, image_max_side=self.image_max_side,
            image_quality=self.image_quality, batch_stages=tuple(self.batch_stages),
            batch_poll_s=self.batch_poll_s, batch_max_wait_s=self.batch_max_wait_s,
        )

    def engine(self) -> LLMEngine:
        """A fresh engine (own call log); the cache file is shared by every engine and process."""
        kind = self.resolved_backend()
        backend = (OpenAIBackend(self.base_url, self.api_key, timeout=self.timeout_s) if kind == "openai"
                   else StubBackend())
        return LLMEngine(backend, LLMCache(self.resolved_cache_path()), self.settings(), self.prices)

    def describe(self) -> dict[str, Any]:
        """Safe-to-show configuration (no key)."""
        return {"backend": self.resolved_backend(), "model": self.model, "base_url": self.base_url or "",
                "stage_overrides": {k: v.get("model", self.model) for k, v in self.stage_overrides.items()}}


def default_llm() -> LLMResource:
    has_key = bool(os.environ.get("OPENAI_API_KEY"))
    return LLMResource(
        backend=os.environ.get("SUBTEXT_LLM_BACKEND", "auto"),
        base_url=os.environ.get("OPENAI_BASE_URL") or None,
        api_key=dg.EnvVar("OPENAI_API_KEY") if has_key else None,
        model=os.environ.get("SUBTEXT_LLM_MODEL", "gpt-4o-mini"),
    )


RESOURCES = {"llm": default_llm()}
