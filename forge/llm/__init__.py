"""The LLM engine (see docs/llm.md): prompts as files, cached concurrent calls, refine loop."""

from forge.llm.accounting import CALLS_COLUMNS, Price
from forge.llm.backends import Backend, BackendError, OpenAIBackend, Reply, StubBackend
from forge.llm.cache import LLMCache
from forge.llm.engine import LLMEngine
from forge.llm.parsing import PARSER_VERSION
from forge.llm.prompts import Prompt, PromptError, load_prompt, load_prompts, prompt_files_hash
from forge.llm.settings import EngineSettings, LLMSettings
from forge.llm.types import AudioRequest, ImageInput, LLMRequest, LLMResult

__all__ = [
    "AudioRequest",
    "Backend",
    "BackendError",
    "CALLS_COLUMNS",
    "EngineSettings",
    "ImageInput",
    "LLMCache",
    "LLMEngine",
    "LLMRequest",
    "LLMResult",
    "LLMSettings",
    "OpenAIBackend",
    "PARSER_VERSION",
    "Price",
    "Prompt",
    "PromptError",
    "Reply",
    "StubBackend",
    "load_prompt",
    "load_prompts",
    "prompt_files_hash",
]
