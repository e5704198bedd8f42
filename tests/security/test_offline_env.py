"""The usage-reporting opt-outs (forge/models/offline_env.py) reach every process that starts things:
the Make targets, the code location, the CLI, ONNX Runtime's sessions, Ray's workers and a private
Ray cluster, and Dagster's instance settings."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from forge.models import offline_env
from forge.models.offline_env import OFFLINE_ENV, apply, dagster_telemetry_enabled, ensure_dagster_telemetry_off

ROOT = Path(__file__).resolve().parents[2]


def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_ENV}
    return {**env, "PYTHONPATH": str(ROOT), **extra}


def test_makefile_exports_the_same_opt_outs():
    exports = dict(re.findall(r"^export (\w+) :?= ?(.*)$", (ROOT / "Makefile").read_text(), re.M))
    assert {k: exports.get(k) for k in OFFLINE_ENV} == OFFLINE_ENV


def test_apply_sets_what_is_missing_and_keeps_an_explicit_choice():
    env = {"RAY_USAGE_STATS_ENABLED": "1"}
    added = apply(env)
    assert env["RAY_USAGE_STATS_ENABLED"] == "1" and "RAY_USAGE_STATS_ENABLED" not in added
    assert env["ORT_DISABLE_TELEMETRY"] == "1" and env["HF_HUB_DISABLE_TELEMETRY"] == "1"
    assert env["LABEL_STUDIO_COLLECT_ANALYTICS"] == "false" and env["LABEL_STUDIO_SENTRY_DSN"] == ""


@pytest.mark.parametrize(
    "code",
    [
        # the code server and every run worker load the definitions (importing the module does nothing)
        "import definitions; definitions.build_defs()",
        "from cli.build import main; main(['--dry-run', '--select', 'sources'])",  # the CLI
    ],
)
def test_entry_points_apply_the_opt_outs(code, tmp_path):
    probe = f"{code}\nimport os, json; print(json.dumps({{k: os.environ.get(k) for k in {sorted(OFFLINE_ENV)!r}}}))"
    env = _clean_env(DAGSTER_HOME=str(tmp_path), SUBTEXT_DATA_DIR=str(tmp_path / "data"))
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert yaml.safe_load(out.stdout.strip().splitlines()[-1]) == OFFLINE_ENV


def test_onnx_sessions_are_created_with_telemetry_off(monkeypatch):
    from forge.models import onnx_session

    monkeypatch.delenv("ORT_DISABLE_TELEMETRY", raising=False)
    onnx_session.onnxruntime()
    assert os.environ["ORT_DISABLE_TELEMETRY"] == "1"


def test_ray_workers_get_the_opt_outs(monkeypatch):
    from forge.scale.ray_pool import worker_runtime_env

    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "1")  # an operator's explicit value travels as set
    env = worker_runtime_env()["env_vars"]
    assert {k: env[k] for k in OFFLINE_ENV} == {**OFFLINE_ENV, "RAY_USAGE_STATS_ENABLED": "1"}


def test_a_private_ray_cluster_starts_on_loopback_with_its_token_in_the_environment(monkeypatch):
    from ray._private import ray_constants

    from forge.scale.ray_pool import private_cluster_env

    for k in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("PYTHONPATH", "/somewhere")
    before = ray_constants.ENABLE_RAY_CLUSTER
    with private_cluster_env():
        assert os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0" and ray_constants.ENABLE_RAY_CLUSTER is False
        site, rest = os.environ["PYTHONPATH"].split(os.pathsep)
        assert (Path(site) / "sitecustomize.py").is_file() and rest == "/somewhere"
        assert len(os.environ["RAY_AUTH_TOKEN"]) == 64
    assert ray_constants.ENABLE_RAY_CLUSTER is before and os.environ["PYTHONPATH"] == "/somewhere"
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ and "RAY_AUTH_TOKEN" in os.environ


def test_ray_dashboard_process_skips_the_cloud_metadata_probe():
    """Run as Ray runs it (sitecustomize on the path, argv[0] = the dashboard script): the probe
    answers without a request; any other process keeps Ray's function."""
    import ray

    site = ROOT / "forge" / "scale" / "ray_local_site"
    dashboard = Path(ray.__file__).parent / "dashboard" / "dashboard.py"
    probe = (
        "import sys; from ray._common.usage import usage_lib as u; "
        "print(getattr(u.get_cloud_from_metadata_requests, '__name__', ''))"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    site_code = (site / "sitecustomize.py").read_text()
    as_dashboard = subprocess.run(  # runpy would set argv[0] to the file it runs: exec keeps Ray's
        [sys.executable, "-c", f"import sys; sys.argv[0] = {str(dashboard)!r}; exec({site_code!r}); {probe}"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    other = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120)
    assert as_dashboard.stdout.strip() == "<lambda>", as_dashboard.stderr[-2000:]
    assert other.stdout.strip() == "get_cloud_from_metadata_requests", other.stderr[-2000:]


def test_dagster_instance_without_settings_gets_telemetry_off(tmp_path):
    from dagster_shared.telemetry import get_telemetry_enabled_from_dagster_yaml

    assert ensure_dagster_telemetry_off(tmp_path) is None
    assert yaml.safe_load((tmp_path / "dagster.yaml").read_text()) == {"telemetry": {"enabled": False}}
    saved = os.environ.get("DAGSTER_HOME")
    os.environ["DAGSTER_HOME"] = str(tmp_path)
    try:  # Dagster's own reader agrees
        assert get_telemetry_enabled_from_dagster_yaml() is False
    finally:
        os.environ.pop("DAGSTER_HOME") if saved is None else os.environ.__setitem__("DAGSTER_HOME", saved)


def test_an_operators_dagster_yaml_is_left_alone_and_named(tmp_path):
    (tmp_path / "dagster.yaml").write_text("run_retries:\n  enabled: true\n")
    note = ensure_dagster_telemetry_off(tmp_path)
    assert note and str(tmp_path) in note and "telemetry" in note
    assert (tmp_path / "dagster.yaml").read_text() == "run_retries:\n  enabled: true\n"


def test_the_projects_instances_have_telemetry_off():
    assert dagster_telemetry_enabled(ROOT / ".dagster_home") is False
    assert offline_env.DAGSTER_TELEMETRY_OFF in (ROOT / ".dagster_home" / "dagster.yaml").read_text()
