"""The blind baseline's re-encoded media are people's private material: the build-time writer
(``forge.evals.human.blind_media``) makes them 0600 files in 0700 folders (docs/review.md, "Two
rooms"), and tightens a copy an older version left readable to all. No server."""

from __future__ import annotations

import os
import stat

from PIL import Image

from forge.benchmarks.registry import get
from forge.evals import human
from forge.people.links import BLIND_MEDIA
from forge.storage import TableStore


def _mode(p) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


def test_blind_copies_are_0600_in_0700_folders(tmp_path):
    old = os.umask(0o022)  # what a shell usually has: plain writes come out 0644 / 0755
    try:
        store = TableStore(tmp_path / "data")
        spec = get("iibench")
        src = store.data_dir / "media" / "images" / "a.png"
        src.parent.mkdir(parents=True)
        Image.new("RGB", (40, 30), (120, 10, 200)).save(src)

        out = human.blind_media(store, spec, "k1", "media/images/a.png")
        made = store.data_dir / BLIND_MEDIA / out
        assert made.is_file() and made.read_bytes() != src.read_bytes()
        assert _mode(made) == 0o600
        assert _mode(store.data_dir / BLIND_MEDIA) == 0o700 and _mode(made.parent) == 0o700

        # a copy an older version wrote 0644 in a 0755 folder is kept, made private
        os.chmod(made, 0o644)
        os.chmod(made.parent, 0o755)
        before = made.stat().st_mtime_ns
        assert human.blind_media(store, spec, "k1", "media/images/a.png") == out
        assert made.stat().st_mtime_ns == before  # not encoded again
        assert _mode(made) == 0o600 and _mode(made.parent) == 0o700
        assert human.blind_media(store, spec, "k2", "media/images/none.png") is None
    finally:
        os.umask(old)
