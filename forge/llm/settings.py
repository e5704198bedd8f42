"""The engine's settings and the names of its per-stage knobs (no Dagster here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class EngineSettings:
    model: str = "gpt-4o-mini"
    transcription_model: str = "whisper-1"  # audio.transcriptions (a stage override's model wins)
    stage_overrides: dict[str, dict[str, Any]] = field(default_factory=dict)  # stage → {model, params}
    default_params: dict[str, Any] = field(default_factory=dict)
    max_concurrency: int = 16
    rpm: int | None = None
    tpm: int | None = None
    max_retries: int = 6  # default retry budget of every transient kind (see retry_budgets)
    backoff_base_s: float = 0.5
    backoff_max_s: float = 30.0
    timeout_s: float = 60.0  # total time for one request
    connect_timeout_s: float = 10.0
    first_byte_timeout_s: float | None = None  # None = timeout_s (a JSON reply arrives in one piece)
    # Hedging / adaptive deadline: a request slower than hedge_after_s (None = adaptive:
    # hedge_factor × p90 latency of this endpoint+model, at least hedge_min_s; hedge_initial_s
    # until hedge_min_samples are known) gets a second copy, first reply wins; with hedge off
    # it is cancelled and retried at once.
    hedge: bool = True
    hedge_after_s: float | None = None
    hedge_factor: float = 2.0
    hedge_min_s: float = 0.5
    hedge_initial_s: float = 20.0
    hedge_min_samples: int = 20
    hedge_max_share: float = 0.1  # at most this share of requests may be hedges
    # Retry budgets per transient kind: rate_limit, server, timeout, connection, malformed.
    retry_budgets: dict[str, int] = field(default_factory=dict)
    # Repair budgets per invalid-reply class: JSONDecodeError, SchemaError, Truncated, EmptyReply.
    repair_budgets: dict[str, int] = field(default_factory=dict)
    structured_output: str = "auto"  # auto (json_schema, falls back) | json_schema | json_object
    repair: bool = True  # False: no repair turns at all
    # The model under evaluation: one request per item, its reply as it came is the answer. No
    # repair turns; a reply to a prompt without a schema is accepted whatever it is (empty,
    # truncated) and cached, so the scorer applies the paper's rule to it. Transport retries stay.
    verbatim: bool = False
    provider: str | None = None  # endpoint identity in cache keys and the ledger (default: base URL)
    progress_every_s: float = 10.0
    image_max_side: int = 768
    image_quality: int = 85
    batch_stages: tuple[str, ...] = ()  # stages sent through the Batch API (see forge/llm/batch.py)
    batch_poll_s: float = 30.0
    batch_max_wait_s: float = 26 * 3600.0
    batch_completion_window: str = "24h"
    batch_max_resubmits: int = 2
    batch_discount: float = 0.5  # batch price = discount × online price

    def stage(self, stage: str, name: str) -> Any:
        """A setting as seen by one stage: ``stage_overrides[stage][name]`` wins over the global one."""
        over = self.stage_overrides.get(stage) or {}
        return over[name] if name in over and over[name] is not None else getattr(self, name)


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
