"""Nothing acts at import (issue #56, point 2): importing ``definitions`` and every module of ``forge/``
reads no file but code. A fresh interpreter records every ``open`` through an audit hook
(``sys.addaudithook``); what it may open is the project's ``.py`` / ``.pyc`` files and whatever lies
in the interpreter's own trees (the standard library, the installed packages and their data files),
plus the null device and the system's time-zone database (read by a library when it loads).
Settings, weights manifests, contracts and prompts are read when a stage or a definitions load asks
for them, never as a side effect of an import. A synthetic module that reads its settings at import
shows the check can fail.

Loading the definitions (``build_defs()``, what the code server, a run worker and ``cli.build``
do) reads the project's declarations and nothing else: the settings, prompts and contracts that
code versions and checks are made from (``config/``, ``data_contracts/``, the yaml files under
``assets/``), never a data dir's tables or a model checkpoint (a weights file's identity is its manifest
pin or its size and mtime); of the data dir, only the environment it was built with
(``environment.json``, applied by ``prepare_process``). The vision stages read ``config/vision.yaml`` then, not when their
module is imported (``assets.vision``, ``resources``: no settings file at import).

The registry's loading of the paper specs (``specs``) reads nothing either: a spec is declared
values (its human steps' label sets are code, ``logic/taxonomy.py``), and what a paper reads from
its folder (items contracts, categories, prompts) is read by a cached loader when first used.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Run in a fresh interpreter: the hook sees every open from the first import on. Prints, per phase,
# the files opened that are neither the project's code nor inside the interpreter's trees.
PROBE = r"""
import importlib, json, os, pkgutil, sys
root, phases = sys.argv[1], sys.argv[2:]
opened = []
sys.addaudithook(lambda event, args: opened.append(args[0]) if event == "open" and args else None)
trees = tuple({os.path.realpath(p) + os.sep for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
system = ("/dev/null", "/usr/share/zoneinfo/", "/proc/")  # /proc: psutil's own import reads /proc/stat

def outside(paths):
    out = set()
    for p in paths:
        if not isinstance(p, (str, bytes, os.PathLike)):
            continue  # a file descriptor: opened by path before
        real = os.path.realpath(os.fsdecode(p))
        in_code = real.startswith(root + os.sep) and (real.endswith((".py", ".pyc")) or "/__pycache__/" in real)
        if not (in_code or real.startswith(trees) or real.startswith(system)):
            out.add(os.path.relpath(real, root) if real.startswith(root + os.sep) else real)
    return sorted(out)

result = {}
for phase in phases:
    del opened[:]
    if phase == "specs":
        from forge.benchmarks import registry
        registry.specs()
    elif phase == "build":
        import definitions
        definitions.build_defs()
    else:
        module = importlib.import_module(phase)
        for info in pkgutil.walk_packages(getattr(module, "__path__", []), phase + "."):
            importlib.import_module(info.name)
    result[phase] = outside(list(opened))
print(json.dumps(result))
"""


def reads_at_import(root: Path, *phases: str, env: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Per phase (a module, with every module under it, ``specs``: the registry's specs, or
    ``build``: the definitions loaded), the files outside the code that it opened, in a fresh
    interpreter run in ``root``."""
    proc = subprocess.run(
        [sys.executable, "-W", "ignore", "-c", PROBE, str(root.resolve()), *phases],
        cwd=root,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "SUBTEXT_RECORDED_ENV": "off", **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_definitions_and_forge_reads_no_file_but_code():
    got = reads_at_import(ROOT, "definitions", "forge", "specs", "resources", "assets.vision")
    assert got["definitions"] == [], got["definitions"]
    assert got["forge"] == [], got["forge"]
    assert got["specs"] == [], got["specs"]
    assert got["resources"] == [], got["resources"]
    # the vision assets' decorators declare their contracts' checks; their settings wait for the load
    assert got["assets.vision"] and all(p.startswith("data_contracts/") for p in got["assets.vision"]), got


def declaration(path: str) -> bool:
    """A project file that declares (settings, prompts, contracts), by where it lies."""
    return path.endswith(".yaml") and path.split("/")[0] in ("config", "data_contracts", "assets")


def test_loading_the_definitions_reads_declarations_only(tmp_path):
    data = tmp_path / "data"
    (data / "tables").mkdir(parents=True)
    (data / "environment.json").write_text("{}")
    weights = tmp_path / "my_yolo.pt"
    weights.write_bytes(b"a checkpoint: its identity is its size and mtime, its bytes are never read at load")
    env = {"SUBTEXT_DATA_DIR": str(data), "SUBTEXT_YOLO_WEIGHTS": str(weights), "SUBTEXT_RECORDED_ENV": "on"}
    got = reads_at_import(ROOT, "build", env=env)["build"]
    assert "config/vision.yaml" in got  # the vision code versions, read when the definitions load
    # outside the project, only the environment the data dir was built with (prepare_process)
    outside = [p for p in got if not declaration(p)]
    assert outside == [str((data / "environment.json").resolve())], outside


def test_a_module_reading_its_settings_at_import_is_caught(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "vision.yaml").write_text("max_side: 960\n")
    (tmp_path / "eager").mkdir()
    (tmp_path / "eager" / "__init__.py").write_text("")
    (tmp_path / "eager" / "settings.py").write_text(
        "from pathlib import Path\nSETTINGS = (Path(__file__).parents[1] / 'config' / 'vision.yaml').read_text()\n"
    )
    (tmp_path / "lazy.py").write_text(
        "from pathlib import Path\ndef settings():\n    return (Path(__file__).parent / 'config' / 'vision.yaml').read_text()\n"
    )
    got = reads_at_import(tmp_path, "eager", "lazy")
    assert got == {"eager": ["config/vision.yaml"], "lazy": []}
