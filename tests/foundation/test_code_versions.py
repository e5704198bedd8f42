"""Staleness that means something: what a setting changes enters the code versions of exactly
the assets it affects (Dagster then marks their descendants), and run flags enter none."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DUMP = (
    "import json, dagster as dg, definitions\n"
    "out = {}\n"
    "for a in definitions.build_defs().assets or []:\n"
    "    if isinstance(a, dg.AssetsDefinition):\n"
    "        out.update({k.to_user_string(): v for k, v in a.code_versions_by_key.items()})\n"
    "print(json.dumps(out))\n"
)


def code_versions(**env: str) -> dict[str, str | None]:
    pinned = ("SUBTEXT_YOLO_WEIGHTS", "SUBTEXT_EXPORT_FORCE_STUB", "SUBTEXT_RAM_CHECKPOINT")
    base = {k: v for k, v in os.environ.items() if k not in pinned and not k.startswith(("OPENAI_", "SUBTEXT_LLM_"))}
    out = subprocess.run(
        [sys.executable, "-c", DUMP], cwd=ROOT, env={**base, **env}, capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def baseline() -> dict[str, str | None]:
    return code_versions()


def changed(a: dict[str, str | None], b: dict[str, str | None]) -> set[str]:
    assert a.keys() == b.keys()
    return {k for k in a if a[k] != b[k]}


def test_a_run_flag_changes_no_code_version(baseline):
    assert changed(baseline, code_versions(SUBTEXT_EXPORT_FORCE_STUB="1")) == set()


def test_real_detector_weights_change_exactly_the_assets_that_run_the_detector(baseline, tmp_path):
    weights = tmp_path / "my_yolo.pt"
    weights.write_bytes(b"not really weights; only its identity is read at load time")
    assert changed(baseline, code_versions(SUBTEXT_YOLO_WEIGHTS=str(weights))) == {"detections", "tags"}


def test_another_endpoint_or_model_changes_exactly_the_llm_stages(baseline):
    import definitions

    llm_assets = {
        k.to_user_string()
        for a in definitions.build_defs().assets or []
        if "llm" in getattr(a, "required_resource_keys", ())
        for k in a.keys
    }
    assert {"iibench_implication", "maia_questions", "vague_direct"} <= llm_assets
    assert "detections" not in llm_assets
    endpoint = code_versions(OPENAI_BASE_URL="http://127.0.0.1:9/v1", SUBTEXT_LLM_MODEL="another-model")
    assert changed(baseline, endpoint) == llm_assets
