"""The paper's policy is one setting (docs/review.md): a `policy` under the top-level `defaults:` of
config/review.yaml holds under every settings profile, the demo's included; a profile's block only
fills in what the top level leaves unset; SUBTEXT_REVIEW_POLICY wins over the file. No server."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.benchmarks.registry import get
from forge.benchmarks.review_settings import review_spec
from forge.benchmarks.review_spec import ReviewPolicy
from forge.people.config import CONFIG_PATH


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("SUBTEXT_REVIEW_POLICY", raising=False)
    monkeypatch.delenv("SUBTEXT_REVIEW_CONFIG", raising=False)


def policy(path: Path, profile: str, name: str = "maia") -> ReviewPolicy:
    return review_spec(name, get(name).review, profile=profile, path=path).policy


def test_the_documented_line_switches_every_profile(tmp_path):
    shipped = CONFIG_PATH.read_text()
    assert "#  policy: required" in shipped
    as_shipped = tmp_path / "shipped.yaml"
    as_shipped.write_text(shipped)
    assert policy(as_shipped, "demo") == ReviewPolicy.ADVISORY  # make demo runs unattended
    switched = tmp_path / "switched.yaml"
    switched.write_text(shipped.replace("#  policy: required", "  policy: required"))  # the one line
    for profile in ("demo", "paper", "a_profile_the_file_does_not_name"):
        assert policy(switched, profile) == ReviewPolicy.REQUIRED


def test_layers_in_order(tmp_path, monkeypatch):
    f = tmp_path / "review.yaml"
    f.write_text(
        "defaults: {reviewers: 2}\n"
        "benchmarks: {hummus: {policy: off}}\n"
        "profiles:\n  demo:\n    defaults: {policy: advisory, reviewers: 1}\n"
    )
    assert policy(f, "demo") == ReviewPolicy.ADVISORY  # the profile fills in what the top level leaves unset
    assert review_spec("maia", get("maia").review, profile="demo", path=f).reviewers == 2  # the top level wins
    assert policy(f, "demo", "hummus") == ReviewPolicy.OFF  # one benchmark's own line
    assert policy(f, "paper") == get("maia").review.policy  # no profile block: the declaration
    monkeypatch.setenv("SUBTEXT_REVIEW_POLICY", "required")
    assert policy(f, "demo", "hummus") == ReviewPolicy.REQUIRED  # the environment wins over the file
