"""The NLI resource: which backend decides entailment / neutral / contradiction.

``backend='llm'`` (default; no NLI weights ship offline, see config/weights.yaml) asks
the LLM engine with the prompt file ``prompt_path``. ``backend='cross_encoder'`` loads a
local sentence-transformers ``CrossEncoder`` from ``model_path`` (or ``SUBTEXT_NLI_MODEL``)
once per process and runs on GPU when present.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dagster as dg
from pydantic import Field, PrivateAttr

from forge.checks.nli import DEFAULT_PROMPT, LLMNLI, CrossEncoderNLI, NLIBackend, NLIError


class NLIResource(dg.ConfigurableResource):
    """NLI backend for contradiction tests (MAIA App. A.8)."""

    backend: str = Field(default="llm", description="'llm' | 'cross_encoder'")
    model_path: str = Field(default="", description="local CrossEncoder folder (cross_encoder backend)")
    device: str = Field(default="", description="torch device; empty = cuda when available, else cpu")
    batch_size: int = 32
    label_order: list[str] = Field(
        default_factory=list, description="output order when the model config only says LABEL_0..2"
    )
    prompt_path: str = Field(default=str(DEFAULT_PROMPT), description="prompt file for the llm backend")

    _cross_encoder: CrossEncoderNLI | None = PrivateAttr(default=None)

    def resolved_model_path(self) -> str:
        return self.model_path or os.environ.get("SUBTEXT_NLI_MODEL", "")

    def prompt_files(self) -> list[Path]:
        """Files that decide the NLI output (for the caller's code_version)."""
        return [Path(self.prompt_path)] if self.backend == "llm" else []

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "model": Path(self.resolved_model_path()).name if self.backend == "cross_encoder" else "llm",
        }

    def classifier(self, engine: Any = None, stage: str = "nli", partition: str = "all") -> NLIBackend:
        """The configured backend; the cross-encoder is loaded on first use and kept."""
        if self.backend == "cross_encoder":
            if self._cross_encoder is None:
                self._cross_encoder = CrossEncoderNLI(
                    self.resolved_model_path(),
                    device=self.device or None,
                    batch_size=self.batch_size,
                    label_order=self.label_order or None,
                )
            return self._cross_encoder
        if self.backend == "llm":
            from forge.llm.prompts import load_prompt

            return LLMNLI(engine, load_prompt(self.prompt_path), stage, partition)
        raise NLIError(f"nli.backend must be 'llm' or 'cross_encoder', not {self.backend!r}")


def default_nli() -> NLIResource:
    path = os.environ.get("SUBTEXT_NLI_MODEL", "")
    return NLIResource(
        backend=os.environ.get("SUBTEXT_NLI_BACKEND", "cross_encoder" if path else "llm"), model_path=path
    )


def resources() -> dict[str, NLIResource]:
    return {"nli": default_nli()}
