"""Models and settings as data: ``config/models.yaml`` and ``config/evals.yaml``."""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from forge.benchmarks.settings import eval_defaults
from forge.benchmarks.spec import BenchmarkSpec
from forge.storage.yaml_files import read_yaml

ROOT = Path(__file__).resolve().parents[2]
MODELS_PATH = ROOT / "config" / "models.yaml"
EVALS_PATH = ROOT / "config" / "evals.yaml"
ACCEPTS = ("text", "image", "frames")
INPUTS = ("image", "frames", "first_frame", "black", "none", "self_caption", "description")
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


@dataclass(frozen=True)
class ModelSpec:
    name: str  # partition key
    model: str  # model id sent to the endpoint
    backend: str = "openai"  # openai | stub
    base_url: str | None = None
    api_key_env: str | None = None
    accepts: str = "image"  # text | image | frames
    max_frames: int = 1
    params: dict[str, Any] = field(default_factory=dict)

    def api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def describe(self) -> dict[str, Any]:
        """Safe to show (no key)."""
        return {
            "name": self.name,
            "model": self.model,
            "backend": self.backend,
            "base_url": self.base_url or "",
            "accepts": self.accepts,
            "max_frames": self.max_frames,
        }


def parse_models(doc: dict[str, Any]) -> list[ModelSpec]:
    out: list[ModelSpec] = []
    for raw in doc.get("models") or []:
        spec = ModelSpec(
            name=str(raw["name"]),
            model=str(raw.get("model") or raw["name"]),
            backend=str(raw.get("backend", "openai")),
            base_url=raw.get("base_url"),
            api_key_env=raw.get("api_key_env"),
            accepts=str(raw.get("accepts", "image")),
            max_frames=int(raw.get("max_frames", 1 if raw.get("accepts", "image") != "frames" else 8)),
            params=dict(raw.get("params") or {}),
        )
        if not _NAME.match(spec.name):
            raise ValueError(f"model name {spec.name!r} must match {_NAME.pattern} (it is a partition key)")
        if spec.backend not in ("openai", "stub"):
            raise ValueError(f"model {spec.name}: backend must be openai or stub")
        if spec.accepts not in ACCEPTS:
            raise ValueError(f"model {spec.name}: accepts must be one of {ACCEPTS}")
        out.append(spec)
    names = [m.name for m in out]
    if len(set(names)) != len(names):
        raise ValueError(f"duplicate model names in models config: {names}")
    return out


def configured_model() -> ModelSpec | None:
    """The endpoint the ``llm`` resource is configured with (OPENAI_BASE_URL / OPENAI_API_KEY,
    SUBTEXT_LLM_MODEL) as a model under evaluation, or None when no endpoint is configured."""
    base_url, has_key = os.environ.get("OPENAI_BASE_URL") or None, bool(os.environ.get("OPENAI_API_KEY"))
    if os.environ.get("SUBTEXT_LLM_BACKEND") == "stub" or not (base_url or has_key):
        return None
    model = os.environ.get("SUBTEXT_LLM_MODEL", "gpt-4o-mini")
    return ModelSpec(
        name=re.sub(r"[^A-Za-z0-9._-]", "-", model)[:64],
        model=model,
        backend="openai",
        base_url=base_url,
        api_key_env="OPENAI_API_KEY" if has_key else None,
        accepts="frames",
        max_frames=8,
        params={"temperature": 0},
    )


def load_models(path: str | Path | None = None) -> list[ModelSpec]:
    """The models of ``config/models.yaml``, plus the configured endpoint's model when one is set
    (``include_configured_model: false`` in the file turns that off)."""
    path = Path(path or os.environ.get("SUBTEXT_EVAL_MODELS") or MODELS_PATH)
    doc = read_yaml(path) or {}
    models = parse_models(doc)
    extra = configured_model() if doc.get("include_configured_model", True) else None
    if extra is not None and not any(m.model == extra.model and m.base_url == extra.base_url for m in models):
        if extra.name in {m.name for m in models}:
            extra = dataclasses.replace(extra, name=f"{extra.name}-configured"[:64])
        models.append(extra)
    return models


@dataclass(frozen=True)
class Setting:
    benchmark: str
    name: str
    input: str
    prompt: str | None = None
    shots: int = 0
    keywords: str | None = None
    variant: str | None = None
    tasks: tuple[str, ...] | None = None
    frames: int = 1
    caption_prompt: str | None = None

    def applicable(self, model: ModelSpec) -> tuple[bool, str]:
        """Whether ``model`` can take this setting's input (else the reason it is skipped)."""
        visual = self.input not in ("none", "description")
        if visual and model.accepts == "text":
            return False, "model accepts text only"
        if self.input == "frames" and self.frames > 1 and model.accepts != "frames":
            return False, "model accepts a single image, setting needs several frames"
        return True, ""

    def n_frames(self, model: ModelSpec) -> int:
        if self.input in ("image", "first_frame", "self_caption"):
            return 1
        if self.input in ("none", "description"):
            return 0
        cap = model.max_frames if model.accepts == "frames" else 1
        return max(1, min(self.frames, cap))


def load_eval_config(path: str | Path | None = None) -> dict[str, Any]:
    return read_yaml(path or EVALS_PATH)


def benchmark_block(cfg: dict[str, Any], spec: BenchmarkSpec) -> dict[str, Any]:
    """One benchmark's evaluation settings: the spec's defaults, then ``benchmarks.<name>``
    of ``config/evals.yaml`` key by key (the file wins), then the export version and split
    to evaluate (per benchmark, else the file's top level, else ``latest`` / ``test``)."""
    block = {**eval_defaults(spec.eval), **((cfg.get("benchmarks") or {}).get(spec.name) or {})}
    block.setdefault("export_version", cfg.get("export_version", "latest"))
    block.setdefault("split", cfg.get("split", "test"))
    if not block.get("settings"):
        raise ValueError(f"{spec.name}: no evaluation settings (config/evals.yaml or the spec's eval defaults)")
    return block


def settings_for(cfg: dict[str, Any], spec: BenchmarkSpec) -> list[Setting]:
    """The benchmark's evaluation settings, checked (known keys, known input, unique names)."""
    out = []
    fields = {f.name for f in dataclasses.fields(Setting)}
    for raw in benchmark_block(cfg, spec)["settings"]:
        unknown = set(raw) - fields
        if unknown:
            raise ValueError(f"{spec.name} setting {raw.get('name')}: unknown keys {sorted(unknown)}")
        if raw["input"] not in INPUTS:
            raise ValueError(f"{spec.name} setting {raw['name']}: input must be one of {INPUTS}")
        kw = dict(raw)
        if kw.get("tasks") is not None:
            kw["tasks"] = tuple(kw["tasks"])
        out.append(Setting(benchmark=spec.name, **kw))
    names = [s.name for s in out]
    if len(set(names)) != len(names):
        raise ValueError(f"{spec.name}: duplicate setting names {names}")
    return out
