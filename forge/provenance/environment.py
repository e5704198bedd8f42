"""The environment a data dir was built with, recorded in it: ``<data dir>/environment.json``.

``make demo`` (``cli/demo.py``) sets variables the build needs: the recipe settings profile,
the sample corpus's ``${...}`` placeholders and the loopback allowances, whether stub exports
are forced, the LLM endpoint. Every other entry point (``make ui``'s code server and its
sensors, ``dg launch -m definitions``, ``python -m cli.build``) loads ``definitions.py``,
which applies the record, so none of them silently builds the same data dir with other
settings: an inbox drop after the demo still resolves the demo's sources, a CLI re-run uses
the demo's profile.

A value that is a path inside the data dir (the sample corpus) is recorded relative to it,
its name listed under ``data_dir_relative``, and read back under the data dir the record is in:
a data dir copied elsewhere builds from its own corpus (forge/storage/paths.py). A record
written before that (absolute paths, no list) is read as it is.

A variable set in the environment wins over the record (an explicit choice), and is
reported; ``SUBTEXT_RECORDED_ENV=off`` ignores the record. Secrets are never recorded: a name that looks like one (``KEY``, ``TOKEN``,
``SECRET``, ``PASSWORD``, ...) is refused, and ``OPENAI_API_KEY`` stays in the environment.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from forge.storage.location import local_base
from forge.storage.paths import resolve_stored, stored_path

ENV_FILE = "environment.json"
DATA_DIR_ENV = "SUBTEXT_DATA_DIR"
RELATIVE_KEY = "data_dir_relative"  # the names whose values are paths relative to the data dir
SWITCH_ENV = "SUBTEXT_RECORDED_ENV"  # `off`: ignore the record (tests/conftest.py sets it)
# Endpoint settings a build reads (docs/llm.md); the key is a secret and is not among them.
ENDPOINT_VARIABLES = ("OPENAI_BASE_URL", "SUBTEXT_LLM_MODEL", "SUBTEXT_LLM_TRANSCRIPTION_MODEL", "SUBTEXT_TRANSCRIBER")
_SECRET = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|COOKIE)", re.IGNORECASE)
_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def data_dir(data: str | os.PathLike[str] | None = None) -> Path:
    return Path(data) if data else local_base()  # on object storage: this machine's work dir


def env_path(data: str | os.PathLike[str] | None = None) -> Path:
    return data_dir(data) / ENV_FILE


def is_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


def recordable(values: Mapping[str, str]) -> dict[str, str]:
    """``values`` without secrets and without names that are not plain variable names."""
    return {k: str(v) for k, v in values.items() if _NAME.match(k) and not is_secret(k) and v is not None}


def endpoint_settings(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The LLM endpoint settings set now (never the key)."""
    env = os.environ if env is None else env
    return {k: env[k] for k in ENDPOINT_VARIABLES if env.get(k)}


def record_environment(values: Mapping[str, str], data: str | os.PathLike[str] | None = None) -> Path:
    """Write the record (replacing an earlier one), atomically; secrets are refused."""
    refused = sorted(k for k in values if is_secret(k))
    if refused:
        raise ValueError(f"refusing to record secrets in the data dir: {', '.join(refused)}")
    path = env_path(data)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc: dict[str, object] = dict(recordable(values))
    inside = [k for k, v in doc.items() if _in_data_dir(str(v), path.parent)]
    for k in inside:
        doc[k] = stored_path(str(doc[k]), path.parent)
    if inside:
        doc[RELATIVE_KEY] = sorted(inside)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)
    return path


def _in_data_dir(value: str, root: Path) -> bool:
    """An absolute path inside the data dir (a URL or a list of names is not)."""
    p = Path(value)
    return p.is_absolute() and not Path(stored_path(p, root)).is_absolute()


def recorded_environment(data: str | os.PathLike[str] | None = None) -> dict[str, str]:
    """The record of a data dir ({} when there is none). A damaged record is an error that
    names the file: building with half the settings is what the record exists to prevent."""
    path = env_path(data)
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: not a readable environment record ({exc}); delete it or re-run `make demo`") from exc
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: not a mapping of variable names to values; delete it or re-run `make demo`")
    relative = doc.pop(RELATIVE_KEY, [])
    if not isinstance(relative, list):
        raise ValueError(f"{path}: {RELATIVE_KEY} must be a list of names; delete it or re-run `make demo`")
    out = recordable({str(k): str(v) for k, v in doc.items()})
    root = path.parent.absolute()  # the data dir this record is in, wherever it was copied
    for k in relative:
        if k in out:
            out[k] = str(resolve_stored(out[k], root))
    return out


def apply_recorded_environment(
    data: str | os.PathLike[str] | None = None, env: dict[str, str] | os._Environ | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """Set every recorded variable the environment does not set. Returns (applied, overridden):
    what came from the record, and the recorded values the environment overrides."""
    env = os.environ if env is None else env
    applied, overridden = {}, {}
    if env.get(SWITCH_ENV, "").strip().lower() == "off":  # the test suite: no user data dir leaks in
        return applied, overridden
    for k, v in recorded_environment(data).items():
        if k not in env or env[k] == "":
            env[k] = v
            applied[k] = v
        elif env[k] != v:
            overridden[k] = v
    return applied, overridden


def shell_exports(data: str | os.PathLike[str] | None = None) -> str:
    """``export NAME='value'`` lines for a shell (``eval "$(python -m forge.provenance.environment)"``)."""
    import shlex

    return "\n".join(f"export {k}={shlex.quote(v)}" for k, v in sorted(recorded_environment(data).items()))


if __name__ == "__main__":  # print the record as shell exports
    import sys

    sys.stdout.write(shell_exports(sys.argv[1] if len(sys.argv) > 1 else None) + "\n")
