"""One S3-compatible server per test session (per xdist worker) for tests/objectstore."""

from __future__ import annotations

import itertools

import pytest
from botocore.retries.standard import ExponentialBackoff

from forge.storage import location
from tests.objectstore.s3_server import S3Server

_BUCKETS = itertools.count()


@pytest.fixture(scope="session")
def s3_server():
    server = S3Server()
    yield server
    server.stop()


@pytest.fixture
def s3_url(s3_server, monkeypatch, tmp_path):
    """A fresh bucket (its URL with a prefix), the environment pointing at the server, a private
    work dir, and the per-process remote cache cleared."""
    for k, v in s3_server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / "work"))
    monkeypatch.setenv(location.ATTEMPTS_ENV, "6")
    # botocore's real retry path, with its throttling backoff scaled down from 1 s (seconds per test otherwise)
    monkeypatch.setitem(ExponentialBackoff._DEFAULT_BACKOFF_CONFIG, "throttling_base_scale", 0.02)
    bucket = f"subtext-test-{next(_BUCKETS)}"
    s3_server.make_bucket(bucket)
    s3_server.faults.pending.clear()
    location.forget_remotes()
    yield f"s3://{bucket}/forge"
    location.forget_remotes()
