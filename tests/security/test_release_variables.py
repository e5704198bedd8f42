import pytest

from forge.media.sources import RefusedVariable
from forge.releases.config import load_releases


def test_release_path_never_expands_a_secret(tmp_path, monkeypatch):
    """A release path is an inbox-grade input: ${OPENAI_API_KEY} is refused by name, never expanded."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    cfg = tmp_path / "releases.yaml"
    cfg.write_text("releases:\n  - {paper: maia, name: r1, path: '/x/${OPENAI_API_KEY}'}\n")
    with pytest.raises(RefusedVariable) as err:
        load_releases(cfg)
    assert "OPENAI_API_KEY" in str(err.value) and "sk-secret-value" not in str(err.value)
