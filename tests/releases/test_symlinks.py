"""Releases kept on another disk: folder and file links are followed, and every file's resolved
path must lie in the release's roots (the release folder, the data dir, ``allowed_roots`` in
the releases config, ``SUBTEXT_ALLOWED_ROOTS``); a file that leaves them is a reject
``symlink_escape`` naming the setting that allows it (docs/security.md)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from assets.recipes.hummus.logic.release import parse_release as parse_hummus
from assets.recipes.vague.logic.release import parse_release as parse_vague
from forge.releases.config import ReleaseInfo, load_releases
from forge.releases.records import place_media


@pytest.fixture
def on_disk(exact_dirs, tmp_path) -> tuple[Path, Path]:
    """The VAGUE release with its images folder moved to a "data disk" and linked back."""
    rel, disk = exact_dirs["vague"], tmp_path / "disk"
    disk.mkdir()
    shutil.move(rel / "images", disk / "vague_images")
    os.symlink(disk / "vague_images", rel / "images", target_is_directory=True)
    return rel, disk


def _info(rel: Path, **kw) -> ReleaseInfo:
    return ReleaseInfo("vague", "vague-disk", rel, "2.0", "x", **kw)


def test_symlinked_images_folder_imports_once_the_disk_is_allowed(on_disk, monkeypatch, tmp_path):
    rel, disk = on_disk
    monkeypatch.delenv("SUBTEXT_ALLOWED_ROOTS", raising=False)
    refused = parse_vague(_info(rel))
    # outside the roots: nothing read from the disk, each file named with the setting that allows it
    assert {r.reason for r in refused.rejects} == {"symlink_escape", "media_missing"}
    esc = [r for r in refused.rejects if r.reason == "symlink_escape"]
    assert len(esc) == 3 and esc[0].record.startswith("images/") and "SUBTEXT_ALLOWED_ROOTS" in esc[0].detail
    assert "allowed_roots" in esc[0].detail and str(disk / "vague_images") in esc[0].detail
    assert refused.items.empty
    monkeypatch.setenv("SUBTEXT_ALLOWED_ROOTS", str(disk))
    ok = parse_vague(_info(rel))
    assert ok.rejects == [] and len(ok.items) == 3
    # media are placed from the resolved files (links never copied as links)
    data = tmp_path / "data"
    assert place_media(ok.media, data) == 3
    placed = [data / p for ps in ok.items["media_paths"] for p in ps]
    assert all(p.is_file() and not p.is_symlink() for p in placed)


def test_allowed_roots_in_the_releases_config(on_disk, tmp_path, monkeypatch):
    rel, disk = on_disk
    monkeypatch.delenv("SUBTEXT_ALLOWED_ROOTS", raising=False)
    cfg = tmp_path / "releases.yaml"
    entry = {"paper": "vague", "name": "vague-disk", "path": str(rel), "version": "2.0", "licence": "x"}
    cfg.write_text(yaml.safe_dump({"releases": [entry]}))
    assert {r.reason for r in parse_vague(load_releases(cfg)[0]).rejects} >= {"symlink_escape"}
    cfg.write_text(yaml.safe_dump({"allowed_roots": [str(disk)], "releases": [entry]}))
    info = load_releases(cfg)[0]
    assert str(disk.resolve()) in info.roots
    assert parse_vague(info).rejects == []
    # or per release
    cfg.write_text(yaml.safe_dump({"releases": [{**entry, "allowed_roots": [str(disk)]}]}))
    assert parse_vague(load_releases(cfg)[0]).rejects == []


def test_a_release_folder_that_is_a_link_and_a_link_cycle(exact_dirs, tmp_path, monkeypatch):
    monkeypatch.delenv("SUBTEXT_ALLOWED_ROOTS", raising=False)
    real = exact_dirs["hummus"]
    link = tmp_path / "releases" / "hummus"
    link.parent.mkdir()
    os.symlink(real, link, target_is_directory=True)
    os.symlink(real / "images", real / "images" / "again", target_is_directory=True)  # a cycle
    cfg = tmp_path / "releases.yaml"
    cfg.write_text(yaml.safe_dump({"releases": [{"paper": "hummus", "name": "h", "path": str(link)}]}))
    parsed = parse_hummus(load_releases(cfg)[0])  # the operator named the link: its target is the root
    assert parsed.rejects == [] and parsed.units["test pairs"]["imported"] == 12


def test_a_dropped_release_may_not_link_out_of_the_data_dir(exact_dirs, tmp_path, monkeypatch):
    monkeypatch.delenv("SUBTEXT_ALLOWED_ROOTS", raising=False)
    data = tmp_path / "data"
    drop = data / "inbox" / "_releases" / "vague" / "dropped"
    drop.mkdir(parents=True)
    outside = tmp_path / "elsewhere.json"
    shutil.copy(next(exact_dirs["vague"].glob("vcr_*.json")), outside)
    os.symlink(outside, drop / "vcr_2_final.json")
    info = next(r for r in load_releases(tmp_path / "none.yaml", data) if r.name == "dropped")
    parsed = parse_vague(info)
    assert [r.reason for r in parsed.rejects] == ["symlink_escape"] and parsed.records == 0
