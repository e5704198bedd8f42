"""Release folders built from the hand-written fixtures (tests/recipes/<paper>/fixtures/, in the
released formats) plus media made here: MAIA gets short real videos, Hummus small JPEG cartoons."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from PIL import Image, ImageDraw

from forge.releases.config import ReleaseInfo

RECIPE_TESTS = Path(__file__).resolve().parents[1] / "recipes"


def fixture(paper: str, shape: str = "release") -> Path:
    """A paper's hand-written release fixture: ``release`` (the released formats) or ``exact``
    (the published layout, written from the real files), in the paper's own test folder."""
    return RECIPE_TESTS / paper / "fixtures" / shape


@pytest.fixture(scope="session")
def _video(tmp_path_factory) -> Path:
    from forge.media.sample_corpus import render_scene_video

    return render_scene_video(tmp_path_factory.mktemp("video") / "scene.mp4", seconds=1, fps=4)


@pytest.fixture
def maia_dir(tmp_path, _video) -> Path:
    d = tmp_path / "releases" / "MAIA_dev_set_ita"
    shutil.copytree(fixture("maia"), d)
    (d / "videos").mkdir()
    for v in ("v01", "v02", "v03"):
        shutil.copy(_video, d / "videos" / f"{v}.mp4")
    return d


@pytest.fixture
def hummus_dir(tmp_path) -> Path:
    d = tmp_path / "releases" / "humorous-multimodal-metaphor-use"
    shutil.copytree(fixture("hummus"), d)
    for contest, size, colour in (
        ("1", (160, 120), (200, 220, 240)),
        ("2", (100, 100), (40, 90, 160)),
        ("3", (200, 150), (230, 200, 120)),
    ):
        im = Image.new("RGB", size, colour)
        ImageDraw.Draw(im).ellipse((10, 10, size[0] // 2, size[1] // 2), fill=(int(contest) * 70 % 255, 30, 30))
        im.save(d / "images" / f"{contest}.jpeg")
    return d


@pytest.fixture
def iibench_dir(tmp_path) -> Path:
    d = tmp_path / "releases" / "II-Bench"
    shutil.copytree(fixture("iibench"), d)
    for name, colour in (
        ("dev/dev-1.jpg", (250, 240, 200)),
        ("dev/dev-2.jpg", (90, 160, 90)),
        ("test/test-1.jpg", (30, 30, 60)),
        ("test/test-2.jpg", (200, 120, 60)),
    ):  # test-3: missing
        (d / "images" / name).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (96, 64), colour).save(d / "images" / name)
    return d


@pytest.fixture
def vague_dir(tmp_path) -> Path:
    d = tmp_path / "releases" / "vague-bench"
    shutil.copytree(fixture("vague"), d)
    (d / "images").mkdir()
    for k, name in enumerate(
        (
            "0001_Cooking_00.01.02.100-00.01.04.200@0",
            "ego_3f2a",
            "0002_Party_00.00.10.000-00.00.12.000@1",
            "0003_Office_00.00.01.000-00.00.03.000@0",
        )
    ):
        Image.new("RGB", (96, 64), (40 * k, 100, 200 - 40 * k)).save(d / "images" / f"{name}.jpg")
    return d


@pytest.fixture
def vimu_dir(tmp_path, _video) -> Path:
    d = tmp_path / "releases" / "ViMU"
    shutil.copytree(fixture("vimu"), d)
    (d / "videos").mkdir()
    for v in ("clip01", "clip02"):  # clip99: missing
        shutil.copy(_video, d / "videos" / f"{v}.mp4")
    return d


@pytest.fixture
def maia_info(maia_dir) -> ReleaseInfo:
    return ReleaseInfo("maia", "maia-dev-ita", maia_dir, "dev-20pct", "CC BY-NC-SA 4.0", "it")


@pytest.fixture
def hummus_info(hummus_dir) -> ReleaseInfo:
    return ReleaseInfo("hummus", "hummus-v1", hummus_dir, "e08a44f", "CC BY 4.0", "en")


@pytest.fixture
def releases_yaml(tmp_path, maia_dir, hummus_dir, monkeypatch) -> Path:
    p = tmp_path / "releases.yaml"
    p.write_text(
        yaml.safe_dump(
            {
                "releases": [
                    {
                        "paper": "maia",
                        "name": "maia-dev-ita",
                        "path": str(maia_dir),
                        "version": "dev-20pct",
                        "licence": "CC BY-NC-SA 4.0",
                        "language": "it",
                    },
                    {
                        "paper": "hummus",
                        "name": "hummus-v1",
                        "path": str(hummus_dir),
                        "version": "e08a44f",
                        "licence": "CC BY 4.0",
                    },
                ]
            }
        )
    )
    monkeypatch.setenv("SUBTEXT_RELEASES_CONFIG", str(p))
    return p


# -- the releases' exact shapes (tests/recipes/<paper>/fixtures/exact/, written from the real files' layouts) --


def _jpeg(path: Path, size: tuple[int, int], colour: tuple[int, int, int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path, format="JPEG" if path.suffix.lower() in (".jpg", ".jpeg") else None)


@pytest.fixture
def exact_dirs(tmp_path, _video) -> dict[str, Path]:
    """One release folder per paper in its published layout, media made here."""
    import json

    out = {}
    for paper in ("maia", "hummus", "iibench", "vague", "vimu"):
        out[paper] = tmp_path / "exact" / paper
        shutil.copytree(fixture(paper, "exact"), out[paper])
    for v in (1, 2):  # the official JSON names "video1"; the file is dataset/videos/1.mp4
        (out["maia"] / "dataset" / "videos").mkdir(exist_ok=True)
        shutil.copy(_video, out["maia"] / "dataset" / "videos" / f"{v}.mp4")
    for contest, size in ((7, (160, 120)), (8, (120, 90)), (9, (100, 100)), (10, (200, 150)), (11, (90, 90))):
        _jpeg(out["hummus"] / "images" / f"{contest}.jpeg", size, (contest * 20, 120, 200))
    for f in ("dev.json", "test.json"):
        for k, rec in enumerate(json.loads((out["iibench"] / "data" / f).read_text())):
            _jpeg(out["iibench"] / rec["local_path"], (96, 64), (40 * k, 90, 160))
    for f in sorted((out["vague"]).glob("*.json")):
        for rec in json.loads(f.read_text()):
            _jpeg(out["vague"] / "images" / f"{rec['image_name']}_annot.jpg", (96, 64), (200, 100, 40))
    (out["vimu"] / "videos").mkdir()
    for v in ("clip01", "clip02"):
        shutil.copy(_video, out["vimu"] / "videos" / f"{v}.mp4")
    return out
