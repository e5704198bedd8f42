"""Images from a local source folder on object storage: the driver, the one machine that has the
folder, puts each source file to the bucket under its content key, and a frames unit on a node
that shares only the bucket reads it from there: with the folder gone, its rows and rejects equal
a local run's over the same items (a refused file is refused with the same reason and words)."""

from __future__ import annotations

import io
import shutil
from dataclasses import replace

from PIL import Image

from forge.media.batch import SOURCE_IMAGES, frames_on_bucket, image_frames_unit, images_to_bucket
from forge.media.images import ImageSettings
from forge.media.policy import IngestPolicy
from forge.storage import TableStore, location


def _png(color: tuple[int, int, int], size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def _items(src, outside) -> list[dict]:
    (src / "red.png").write_bytes(_png((200, 20, 20), (64, 48)))
    (src / "blue.PNG").write_bytes(_png((20, 20, 200), (80, 60)))
    (src / "broken.png").write_bytes(b"not an image at all")
    (src / "huge.png").write_bytes(_png((1, 2, 3), (64, 64)) + b"\0" * 4000)
    (outside / "secret.png").write_bytes(_png((9, 9, 9), (40, 40)))
    names = {"red": "red.png", "blue": "blue.PNG", "broken": "broken.png", "huge": "huge.png", "gone": "gone.png"}
    items = [{"item_id": k, "source": "inbox_s", "path": str(src / v), "url": None} for k, v in names.items()]
    items.append({"item_id": "outside", "source": "inbox_s", "path": str(outside / "secret.png"), "url": None})
    return items


def test_a_node_without_the_source_folder_makes_the_local_runs_frames(s3_url, tmp_path, monkeypatch):
    src, outside = tmp_path / "inbox", tmp_path / "elsewhere"
    src.mkdir()
    outside.mkdir()
    items = _items(src, outside)
    base = ImageSettings(max_bytes=3000, policy=IngestPolicy(roots=(str(src),)))

    local = TableStore(tmp_path / "data")  # the reference: the same items on a local data dir
    local_settings = replace(base, policy=base.policy.with_roots(local.data_dir))
    want_rows, want_rejects = image_frames_unit(items, "b1", local.data_dir, local.media_dir / "images", local_settings)
    assert sorted(r["item_id"] for r in want_rows) == ["blue", "red"]
    assert sorted(r[1] for r in want_rejects) == ["decode_error", "missing_file", "path_outside_roots", "too_large"]

    driver = TableStore(s3_url)
    settings = replace(base, policy=base.policy.with_roots(driver.data_dir))
    staged = images_to_bucket(driver, items, settings)
    assert all(it["path"] is None for it in staged)  # no node is handed a path it lacks
    sources = driver.remote.listing(SOURCE_IMAGES)
    assert len(sources) == 3 and sum(n.endswith(".png") for n in sources) == 3  # red, blue, broken; by content
    assert images_to_bucket(driver, items, settings) == staged  # a re-run: the same keys, nothing new
    assert driver.remote.listing(SOURCE_IMAGES) == sources

    shutil.rmtree(src)  # the other node has no such folder
    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / "node2"))
    location.forget_remotes()
    rows, rejects = frames_on_bucket(s3_url, image_frames_unit, (staged, "b1"), "images", (settings,))
    assert rows == want_rows and rejects == want_rejects
    node2 = TableStore(s3_url)
    for r in rows:  # each frame in the bucket, the bytes its row names
        assert node2.remote.get(r["path"])[0] == (local.data_dir / r["path"]).read_bytes()
