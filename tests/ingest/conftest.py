"""Fixtures for the media-trunk tests: the sample corpus (built once) and the loopback server."""

import pytest

from forge.media.loopback import serve
from forge.media.sample_corpus import build_sample_corpus


@pytest.fixture(scope="session")
def corpus(tmp_path_factory):
    return build_sample_corpus(tmp_path_factory.mktemp("sample_corpus"))


@pytest.fixture(scope="session")
def server(corpus):
    with serve(corpus.web_dir) as s:
        yield s
