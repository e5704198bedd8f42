"""Opt-outs for every dependency that can report usage or errors, or fetch at run time.

One table, applied by every process that starts things: ``cli.build`` (the CLI), the code
location (``definitions.py``), the Make targets (the Makefile exports the same values; a test
keeps them equal), Ray's workers (``forge/scale/ray_pool.py`` puts them in the runtime env)
and the review server. Why each one is here: docs/security.md, "Nothing phones home".

``apply()`` sets a value only where the environment has none, so an operator's explicit
choice wins. It must run before the library reads it: ONNX Runtime reads
``ORT_DISABLE_TELEMETRY`` when its environment is created (the first session); Hugging Face,
Ultralytics and Ray read theirs when first imported or started.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, MutableMapping
from pathlib import Path

OFFLINE_ENV: dict[str, str] = {
    # ONNX Runtime: its telemetry (enabled in the PyPI build) writes ~/.cache/Microsoft/... and
    # resolves a Microsoft events host a few seconds after the first session is created.
    # disable_telemetry_events() does not stop the lookups; this variable does.
    "ORT_DISABLE_TELEMETRY": "1",
    # Ray: usage stats (a report to Ray's server from the head node) off for clusters this
    # process starts (address "local"); the workers get it through the runtime env.
    "RAY_USAGE_STATS_ENABLED": "0",
    # Hugging Face Hub / transformers / datasets / sentence-transformers: no telemetry pings,
    # no version check, no implicit token, and the Hub never contacted (models are local).
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_UPDATE_CHECK": "1",
    "HF_HUB_DISABLE_IMPLICIT_TOKEN": "1",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    # The cross-tool convention (also honoured by huggingface_hub): no tracking.
    "DO_NOT_TRACK": "1",
    # Ultralytics: YOLO_OFFLINE stops its DNS probe (is_online), so its analytics events and
    # Sentry reports, which need ONLINE, never start; no pip installs at run time. Settings
    # sync is turned off too (forge/vision/offline.py), in its config dir, never $HOME.
    "YOLO_OFFLINE": "1",
    "YOLO_AUTOINSTALL": "false",
    # Label Studio (the review server): no analytics, no Sentry error reports (backend or
    # browser; its default DSNs point at the vendor), no PyPI version check. It reads each
    # setting as LABEL_STUDIO_<name>, HEARTEX_<name> or <name>, and sentry_sdk itself reads
    # SENTRY_DSN: both spellings are empty.
    "LABEL_STUDIO_COLLECT_ANALYTICS": "false",
    "LABEL_STUDIO_SENTRY_DSN": "",
    "LABEL_STUDIO_FRONTEND_SENTRY_DSN": "",
    "SENTRY_DSN": "",
    "FRONTEND_SENTRY_DSN": "",
    "LABEL_STUDIO_LATEST_VERSION_CHECK": "false",
    # Selenium (the UI test): Selenium Manager sends usage stats and downloads drivers.
    "SE_AVOID_STATS": "true",
    "SE_OFFLINE": "true",
}

# Dagster has no environment switch: its telemetry follows the instance's dagster.yaml.
DAGSTER_TELEMETRY_OFF = "telemetry:\n  enabled: false\n"


def apply(env: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Set each opt-out ``env`` (default ``os.environ``) does not set yet; returns what it set."""
    target = os.environ if env is None else env
    added = {k: v for k, v in OFFLINE_ENV.items() if k not in target}
    target.update(added)
    return added


def worker_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The opt-outs as this process has them (an operator's explicit value kept), for a Ray
    runtime env or a subprocess started with a fresh environment."""
    src = os.environ if base is None else base
    return {k: src.get(k, v) for k, v in OFFLINE_ENV.items()}


def dagster_telemetry_enabled(home: str | Path | None = None) -> bool:
    """Whether Dagster would record usage for the instance at ``home`` (default ``$DAGSTER_HOME``):
    on unless its dagster.yaml says ``telemetry: enabled: false`` (Dagster's own default is on)."""
    from forge.storage.yaml_files import read_yaml

    home = home or os.environ.get("DAGSTER_HOME")
    if not home:
        return True  # the CLI then logs under ~/.dagster
    for name in ("dagster.yaml", "dagster.yml"):
        path = Path(home) / name
        if path.exists():
            doc = read_yaml(path) or {}
            return bool(((doc.get("telemetry") or {}) if isinstance(doc, dict) else {}).get("enabled", True))
    return True


def ensure_dagster_telemetry_off(home: str | Path | None = None) -> str | None:
    """Give an instance without settings (no dagster.yaml yet) ``telemetry: enabled: false``.

    An instance that has a dagster.yaml is the operator's: it is left as is and, when it leaves
    telemetry on, the returned line says so (callers print it). None when telemetry is off."""
    home = home or os.environ.get("DAGSTER_HOME")
    if not home:
        return None  # no instance to configure (ephemeral instances record nothing)
    root = Path(home)
    if not any((root / n).exists() for n in ("dagster.yaml", "dagster.yml")) and root.is_dir():
        tmp = root / ".dagster.yaml.tmp"
        tmp.write_text(DAGSTER_TELEMETRY_OFF, encoding="utf-8")
        tmp.replace(root / "dagster.yaml")
    if dagster_telemetry_enabled(root):
        return (
            f"Dagster telemetry is on for the instance at {root} (its dagster.yaml): add "
            "'telemetry: {enabled: false}' there to keep usage data local (docs/security.md)"
        )
    return None
