"""The LLM engine's public types: what recipes build and what they get back.

Recipes never touch the ``openai`` client. They build ``LLMRequest``s from a ``Prompt``
(see ``forge/llm/prompts.py``), hand a list to ``LLMEngine.run(...)`` and get one
``LLMResult`` per request, in order. A failed item is an ``LLMResult`` with ``ok=False``
and a reason, never an empty string or a placeholder.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

# An image a request carries is declared beside its encoder (forge/llm/images.py), which imports
# nothing of the engine: prompts -> images, and this module -> images, prompts, with no way back.
from forge.llm.images import ImageInput

if TYPE_CHECKING:
    from forge.llm.prompts import Prompt


@dataclass
class LLMRequest:
    item_id: str  # the row this call is for (stable; recorded in llm_calls)
    prompt: Any  # forge.llm.prompts.Prompt
    variables: dict[str, Any] = field(default_factory=dict)
    images: list[ImageInput] = field(default_factory=list)
    # The images go before the text in the user turn (a paper's official order of parts); part of
    # the cache key when set, so a reply to the other order is never reused.
    images_first: bool = False
    # Extra turns appended after the rendered prompt (e.g. refine feedback).
    extra_messages: list[dict[str, Any]] = field(default_factory=list)
    # Per-request overrides of generation params (temperature, n, seed, max_tokens...).
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class AudioRequest:
    """Audio to transcribe (``LLMEngine.transcribe``): encoded bytes, cached by their hash."""

    item_id: str
    data: bytes
    filename: str = "audio.flac"  # the extension tells the endpoint the format
    duration_s: float = 0.0  # billed length when the endpoint reports no usage
    # language (ISO-639-1), prompt, temperature: sent as audio.transcriptions.create arguments
    params: dict[str, Any] = field(default_factory=dict)


@dataclass
class LLMResult:
    item_id: str
    ok: bool
    data: dict[str, Any] | None  # parsed, schema-valid JSON when ok
    text: str | None  # raw reply text (also for failures, when there was one)
    error: str | None  # reason when not ok (e.g. "schema: 'answer' is required")
    error_class: str | None
    prompt_name: str
    prompt_hash: str
    model: str
    backend: str  # "openai" or "stub"
    cached: bool
    attempts: int
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    request_key: str = ""  # the cache key (joins llm_calls.request_key)


@dataclass
class Prepared:
    req: LLMRequest
    prompt: Prompt
    model: str
    params: dict[str, Any]
    base_messages: list[dict[str, Any]]  # text-only rendered prompt + extra messages
    key: str
    audio: AudioRequest | None = None  # set: an audio.transcriptions request, not a chat completion
