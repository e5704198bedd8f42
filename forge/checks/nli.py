"""Natural language inference: does S2 follow from S1, contradict it, or neither?

Labels are always ``entailment`` / ``neutral`` / ``contradiction`` (``LABELS``), whatever
the backend calls them. Two backends share one interface (``classify(pairs, item_ids)``):

* ``CrossEncoderNLI`` — a local NLI cross-encoder through sentence-transformers'
  ``CrossEncoder``, loaded once from a directory (offline; nothing downloads). The label
  order is read from the model's ``config.id2label``; models that only say ``LABEL_0..2``
  need ``label_order`` (e.g. the cross-encoder/nli-* family is contradiction, entailment,
  neutral).
* ``LLMNLI`` — the LLM engine with a prompt file (default ``forge/checks/prompts/nli.yaml``,
  MAIA Fig. 13B), schema-constrained to one label.

MAIA (App. A.8) only acts on entailment: neutral foils were found to be valid on
inspection, so callers usually test ``label == "entailment"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

# The result and backend types sit with the other model protocols (the benchmark spec names them).
from forge.models.protocols import NLIBackend, NLIResult

__all__ = [
    "DEFAULT_PROMPT",
    "LABELS",
    "LLMNLI",
    "CrossEncoderNLI",
    "NLIBackend",
    "NLIError",
    "NLIResult",
    "canonical_label",
    "label_rates",
    "parse_llm_result",
]

LABELS: tuple[str, ...] = ("entailment", "neutral", "contradiction")
DEFAULT_PROMPT = Path(__file__).resolve().parent / "prompts" / "nli.yaml"


class NLIError(RuntimeError):
    """The backend cannot run (no weights configured, no engine, unknown labels)."""


def canonical_label(raw: Any) -> str | None:
    """Map a backend's label spelling to one of ``LABELS`` (None when unrecognisable)."""
    s = str(raw or "").strip().lower()
    if s.startswith("entail"):
        return "entailment"
    if s.startswith("contradict") or s.startswith("contradiction"):
        return "contradiction"
    if s.startswith("neutral"):
        return "neutral"
    return None


class CrossEncoderNLI:
    """A local NLI cross-encoder; construct once per process (it loads the weights)."""

    name = "cross_encoder"

    def __init__(
        self,
        model_path: str | Path,
        device: str | None = None,
        batch_size: int = 32,
        label_order: Sequence[str] | None = None,
    ):
        path = Path(model_path)
        if not str(model_path) or not path.is_dir():
            raise NLIError(
                f"NLI cross-encoder weights not found at {str(model_path)!r} "
                "(set SUBTEXT_NLI_MODEL / the nli resource's model_path to a local model folder)"
            )
        from sentence_transformers import CrossEncoder

        self.model_path = str(path)
        self.batch_size = batch_size
        self.model = CrossEncoder(self.model_path, device=device or None, local_files_only=True)
        n = int(getattr(self.model.config, "num_labels", 0) or 0)
        if label_order:
            order = [canonical_label(x) for x in label_order]
        else:
            id2label = getattr(self.model.config, "id2label", {}) or {}
            order = [canonical_label(id2label.get(i, id2label.get(str(i)))) for i in range(n)]
        if n != 3 or sorted(x for x in order if x) != sorted(LABELS):
            raise NLIError(
                f"{self.model_path}: cannot map outputs {order!r} (num_labels={n}) to {LABELS}; pass label_order"
            )
        self.order: list[str] = [x for x in order if x]

    def classify(self, pairs: Sequence[tuple[str, str]], item_ids: Sequence[str] | None = None) -> list[NLIResult]:
        ids = list(item_ids) if item_ids is not None else [str(i) for i in range(len(pairs))]
        if not pairs:
            return []
        probs = self.model.predict(
            [list(p) for p in pairs],
            batch_size=self.batch_size,
            apply_softmax=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        out = []
        for iid, row in zip(ids, probs, strict=True):
            scores = {lab: float(row[k]) for k, lab in enumerate(self.order)}
            out.append(
                NLIResult(
                    item_id=iid,
                    label=max(scores, key=scores.__getitem__),
                    scores=scores,
                    backend=self.name,
                    model=Path(self.model_path).name,
                )
            )
        return out


class LLMNLI:
    """NLI through the LLM engine: one request per pair, reply ``{"label": ...}``."""

    name = "llm"

    def __init__(self, engine: Any, prompt: Any, stage: str, partition: str):
        if engine is None:
            raise NLIError("the llm NLI backend needs an LLM engine")
        self.engine, self.prompt, self.stage, self.partition = engine, prompt, stage, partition

    def requests(self, pairs: Sequence[tuple[str, str]], item_ids: Sequence[str]) -> list[Any]:
        from forge.llm.types import LLMRequest

        return [
            LLMRequest(item_id=iid, prompt=self.prompt, variables={"premise": s1, "hypothesis": s2})
            for iid, (s1, s2) in zip(item_ids, pairs, strict=True)
        ]

    def classify(self, pairs: Sequence[tuple[str, str]], item_ids: Sequence[str] | None = None) -> list[NLIResult]:
        ids = list(item_ids) if item_ids is not None else [str(i) for i in range(len(pairs))]
        if not pairs:
            return []
        results = self.engine.run(self.stage, self.partition, self.requests(pairs, ids))
        return [parse_llm_result(r) for r in results]


def parse_llm_result(r: Any) -> NLIResult:
    """An engine ``LLMResult`` → ``NLIResult`` (failed calls and unknown labels carry an error)."""
    label = canonical_label((r.data or {}).get("label")) if r.ok else None
    error = r.error if not r.ok else (None if label else f"unrecognised label {(r.data or {}).get('label')!r}")
    return NLIResult(
        item_id=r.item_id,
        label=label,
        scores=None,
        backend=r.backend,
        model=r.model,
        prompt_hash=r.prompt_hash,
        error=error,
    )


def label_rates(results: Sequence[NLIResult]) -> dict[str, float]:
    """Share of each label among successful results (plus ``failed``), for check metadata."""
    n = len(results)
    if not n:
        return {lab: 0.0 for lab in (*LABELS, "failed")}
    rates = {lab: sum(r.label == lab for r in results) / n for lab in LABELS}
    rates["failed"] = sum(not r.ok for r in results) / n
    return rates
