"""Weights come from the pinned registry package (or the SUBTEXT_MODELS_DIR override) and are
sha256-checked against config/weights.yaml before first use."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from forge.models.weights import (
    EASYOCR_FILES,
    STATUSES,
    WeightsMismatch,
    easyocr_model_dir,
    load_manifest,
    verify_file,
    weights_in_use,
    weights_summary_lines,
)

REPO = Path(__file__).resolve().parents[2]


def test_manifest_lists_every_model_with_status_source_licence():
    m = load_manifest()
    for name in (
        "easyocr_craft",
        "easyocr_english_g2",
        "all_minilm_l6_v2",
        "yolo11n",
        "yolov8n",
        "yolo11n_architecture",
        "ram_swin_large_14m",
        "nli_cross_encoder",
    ):
        assert name in m, name
    for e in m.values():
        assert e.status in STATUSES and e.source and e.licence, e
        if e.status == "bundled":
            assert e.sha256 and e.package and "==" in e.package, e  # pinned package and pinned bytes


def test_bundled_packages_are_pinned_in_pyproject():
    text = (REPO / "pyproject.toml").read_text()
    for e in load_manifest().values():
        if e.package:
            assert f'"{e.package}"' in text, e.package


def test_easyocr_weights_come_from_the_registry_package_without_override(monkeypatch):
    monkeypatch.delenv("SUBTEXT_MODELS_DIR", raising=False)
    import easyocr_en_models

    folder = easyocr_model_dir()
    assert Path(folder) == Path(easyocr_en_models.model_dir())
    assert "shared" not in Path(folder).parts


def test_override_dir_is_used_and_checked(tmp_path, monkeypatch):
    monkeypatch.delenv("SUBTEXT_MODELS_DIR", raising=False)
    src = Path(easyocr_model_dir())
    (tmp_path / "easyocr").mkdir()
    for name in EASYOCR_FILES:
        (tmp_path / "easyocr" / name).symlink_to(src / name)
    monkeypatch.setenv("SUBTEXT_MODELS_DIR", str(tmp_path))
    assert easyocr_model_dir() == str(tmp_path / "easyocr")


def test_altered_weights_file_is_a_clear_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.delenv("SUBTEXT_MODELS_DIR", raising=False)
    src = Path(easyocr_model_dir())
    d = tmp_path / "easyocr"
    d.mkdir()
    shutil.copyfile(src / "craft_mlt_25k.pth", d / "craft_mlt_25k.pth")
    (d / "english_g2.pth").write_bytes(b"\x80\x04not the weights")
    monkeypatch.setenv("SUBTEXT_MODELS_DIR", str(tmp_path))
    with pytest.raises(WeightsMismatch, match=r"english_g2\.pth has sha256 .* expected e2272681"):
        easyocr_model_dir()
    (d / "english_g2.pth").unlink()
    with pytest.raises(WeightsMismatch, match=r"english_g2\.pth is missing"):
        easyocr_model_dir()


def test_ocr_resource_refuses_altered_weights_before_easyocr_loads_them(tmp_path, monkeypatch):
    from resources.ocr import OCRResource

    d = tmp_path / "easyocr"
    d.mkdir()
    for name in EASYOCR_FILES:
        (d / name).write_bytes(b"pickle bytes nobody pinned")
    monkeypatch.setitem(sys.modules, "easyocr", None)  # importing it would fail: prove we stop first
    with pytest.raises(WeightsMismatch, match="craft_mlt_25k.pth"):
        OCRResource(model_dir=str(d), gpu=False).reader()


def test_file_without_pinned_hash_is_refused(tmp_path):
    f = tmp_path / "unknown.pth"
    f.write_bytes(b"x")
    with pytest.raises(WeightsMismatch, match="no pinned sha256"):
        verify_file(f)


def test_weights_in_use_names_bundled_and_configured_models(monkeypatch):
    monkeypatch.delenv("SUBTEXT_YOLO_WEIGHTS", raising=False)
    used = {u["name"]: u for u in weights_in_use()}
    assert {"easyocr_craft", "easyocr_english_g2", "yolo11n_architecture"} <= set(used)
    assert used["yolo11n_architecture"]["status"] == "architecture-only"
    assert "ram_swin_large_14m" not in used
    lines = weights_summary_lines()
    assert any(line.startswith("easyocr_craft (bundled): craft_mlt_25k.pth") for line in lines)
    assert "ram_swin_large_14m" in {u["name"] for u in weights_in_use(tagger_backend="ram")}


def test_nothing_refers_to_a_folder_outside_the_repository():
    """A user's clone has no ../shared beside it and none of this machine's absolute paths."""
    import re
    import subprocess

    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    pattern = re.compile(
        r"\.\./shared|shared[/](models|papers|guides)|/work[/](shared|main|wt)\b"
    )  # [/]: no self-match
    hits = []
    for name in files:
        if name.endswith((".py", ".md", ".yaml", ".yml", ".sh", ".toml", ".cfg")) or name in ("Makefile", ".ci/run"):
            for n, line in enumerate((REPO / name).read_text(errors="replace").splitlines(), 1):
                if pattern.search(line) and name != "tests/security/test_weights.py":
                    hits.append(f"{name}:{n}: {line.strip()[:120]}")
    assert hits == []
