"""The engine's settings, declared once, and the one reader of per-stage overrides (no Dagster here).

``LLMSettings`` holds every setting a user configures; the ``llm`` resource (``resources/llm.py``)
inherits its fields, so its Dagster config and the engine never disagree on a name or a default.
``EngineSettings`` adds the knobs only code sets (the evaluation engine's ``verbatim``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

DEFAULT_REPAIRS = {"JSONDecodeError": 3, "SchemaError": 3, "Truncated": 1, "EmptyReply": 2}
TRANSIENT_KINDS = ("rate_limit", "server", "timeout", "connection", "malformed")
# Settings a stage override may carry besides model and params.
STAGE_KEYS = (
    "timeout_s",
    "connect_timeout_s",
    "first_byte_timeout_s",
    "hedge",
    "hedge_after_s",
    "hedge_factor",
    "retry_budgets",
    "repair_budgets",
)
_UNSET = object()


class LLMSettings(BaseModel):
    """What the engine does, as the ``llm`` resource's config (also usable without Dagster)."""

    model: str = "gpt-4o-mini"
    transcription_model: str = Field(
        default="whisper-1",
        description="model for audio.transcriptions (the `transcripts` stage); a stage override's model wins",
    )
    stage_overrides: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="stage → {model: ..., params: {temperature: ...}, and any of: " + ", ".join(STAGE_KEYS) + "}",
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
    first_byte_timeout_s: float | None = Field(
        default=None, description="None = timeout_s (a JSON reply arrives in one piece)"
    )
    # Hedging / adaptive deadline: a request slower than hedge_after_s (None = adaptive:
    # hedge_factor × p90 latency of this endpoint+model, at least hedge_min_s; hedge_initial_s
    # until hedge_min_samples are known) gets a second copy, first reply wins; with hedge off
    # it is cancelled and retried at once.
    hedge: bool = Field(
        default=True,
        description="send a second copy of a stalled request (first reply wins); False: cancel it and retry at once",
    )
    hedge_after_s: float | None = Field(default=None, description="None = adaptive: hedge_factor × p90 latency")
    hedge_factor: float = 2.0
    hedge_min_s: float = 0.5
    hedge_initial_s: float = 20.0
    hedge_min_samples: int = 20
    hedge_max_share: float = Field(default=0.1, description="at most this share of requests may be hedges")
    max_retries: int = Field(default=6, description="default retry budget of every transient kind")
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
    structured_output: str = Field(
        default="auto", description="auto (json_schema, falls back to json_object) | json_schema | json_object"
    )
    progress_every_s: float = 10.0
    image_max_side: int = 768
    image_quality: int = 85
    batch_stages: list[str] = Field(
        default_factory=list, description="stages sent through the OpenAI Batch API (forge/llm/batch.py)"
    )
    batch_poll_s: float = 30.0
    batch_max_wait_s: float = 26 * 3600.0
    batch_completion_window: str = "24h"
    batch_max_resubmits: int = 2
    batch_discount: float = Field(default=0.5, description="batch price = discount × online price")

    def stage(self, stage: str, name: str, default: Any = _UNSET) -> Any:
        """A setting as one stage sees it: the only reader of ``stage_overrides``.

        ``stage_overrides[stage][name]`` (unless missing, None or "") wins over the global
        setting ``name`` or, for a name with none, ``default`` (``params``: ``{}``; the
        transcription model: ``transcription_model``). Mappings (budgets, params) merge, the
        stage's keys winning."""
        base = getattr(self, name) if default is _UNSET else default
        over = (self.stage_overrides.get(stage) or {}).get(name)
        if over is None or over == "":
            return base
        if isinstance(base, Mapping) and isinstance(over, Mapping):
            return {**base, **over}
        return over

    def check_overrides(self) -> None:
        """Raise on a stage override key the engine does not read (a typo would silently do nothing)."""
        allowed = ("model", "params", *STAGE_KEYS)
        unknown = {f"{st}.{k}" for st, o in self.stage_overrides.items() for k in (o or {}) if k not in allowed}
        if unknown:
            raise ValueError(
                f"llm.stage_overrides: unknown keys {sorted(unknown)}; allowed: model, params, {', '.join(STAGE_KEYS)}"
            )


class EngineSettings(LLMSettings):
    """``LLMSettings`` plus what only code sets. Copy with ``settings.model_copy(update={...})``."""

    repair: bool = True  # False: no repair turns at all
    # The model under evaluation: one request per item, its reply as it came is the answer. No
    # repair turns; a reply to a prompt without a schema is accepted whatever it is (empty,
    # truncated) and cached, so the scorer applies the paper's rule to it. Transport retries stay.
    verbatim: bool = False
