import av
import numpy as np
import pytest
from PIL import Image

from forge.media.frames import FrameSettings, blur_variance, frames_for_video, sample_at, select_pool, uniform_times
from forge.media.images import ImageReject, ImageSettings, image_frame, normalise_image


def test_uniform_times_are_slice_centres():
    assert uniform_times(0, 8, 4) == [1.0, 3.0, 5.0, 7.0]


def test_seeking_returns_the_same_frames_as_decoding_everything(corpus):
    path = corpus.files["bikes"]
    times = uniform_times(0.0, 10.0, 32)
    got = sample_at(path, times)
    assert len(got) == 32
    with av.open(str(path)) as c:
        all_frames = [(float(f.pts * f.time_base), f.to_ndarray(format="rgb24")) for f in c.decode(video=0)]
    for s in got:
        t, img = next((t, img) for t, img in all_frames if t >= s.requested_s - 0.02)  # 25 fps: half a frame
        assert abs(s.timestamp_s - t) < 1e-6
        assert np.array_equal(s.image, img)


def test_decoder_threads_follow_the_cpus_the_process_was_given(corpus, monkeypatch):
    """A Ray worker sets OMP_NUM_THREADS to its task's num_cpus: decoding then uses that many
    threads (not every core of the node), with the same frames."""
    import forge.media.frames as frames_mod

    seen = []
    real_open = av.open

    def spy(*a, **kw):
        c = real_open(*a, **kw)
        seen.append(c.streams.video[0].codec_context)
        return c

    path = corpus.files["bikes"]
    times = uniform_times(0.0, 4.0, 6)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    auto = sample_at(path, times)
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    monkeypatch.setattr(frames_mod.av, "open", spy)
    one = sample_at(path, times)
    assert seen and seen[-1].thread_count == 1
    assert [s.timestamp_s for s in one] == [s.timestamp_s for s in auto]
    assert all(np.array_equal(a.image, b.image) for a, b in zip(one, auto))
    monkeypatch.setenv("OMP_NUM_THREADS", "not a number")
    assert frames_mod.decode_threads() == 0


def test_blur_variance_orders_sharp_and_blurred(corpus):
    img = np.asarray(Image.open(corpus.files["grace_hopper"]).convert("RGB"))
    import cv2

    assert blur_variance(img) > 5 * blur_variance(cv2.GaussianBlur(img, (15, 15), 5))


def test_pool_selection_respects_gap_and_blur():
    cands = [(0.5, 10.0), (1.5, 300.0), (2.5, 290.0), (3.5, 50.0), (4.5, 200.0), (8.5, 120.0)]
    kept, blurry = select_pool(cands, min_gap_s=3.0, max_n=8, threshold=60.0)
    assert kept == [1.5, 4.5, 8.5]
    assert [t for t, _ in blurry] == [0.5, 3.5]
    assert select_pool(cands, 3.0, 2, 60.0)[0] == [1.5, 4.5]


def test_frames_for_video_clip_frames_and_pool(corpus, tmp_path):
    clips = [
        {"clip_id": "s_seg000", "start_s": 0.0, "end_s": 30.0},
        {"clip_id": "s_eng", "start_s": 6.0, "end_s": 36.0},
    ]
    st = FrameSettings(frames_per_clip=8, pool_interval_s=1.0, pool_min_gap_s=4.0, blur_threshold=20.0)
    vf = frames_for_video(corpus.files["scenes"], "s", 36.0, clips, tmp_path / "f", tmp_path, st)
    clip_rows = [r for r in vf.rows if r["kind"] == "clip_frame"]
    assert len(clip_rows) == 16 and [r["frame_index"] for r in clip_rows[:8]] == list(range(8))
    ts = [r["timestamp_s"] for r in clip_rows if r["clip_id"] == "s_eng"]
    assert all(abs(t - e) < 0.1 for t, e in zip(ts, uniform_times(6.0, 36.0, 8)))
    pool = sorted(r["timestamp_s"] for r in vf.rows if r["kind"] == "pool_frame")
    assert 1 <= len(pool) <= st.pool_max_per_video
    assert all(b - a >= 4.0 - 0.1 for a, b in zip(pool, pool[1:]))
    assert all((tmp_path / r["path"]).is_file() and r["width"] == 320 for r in vf.rows)
    assert len({r["frame_id"] for r in vf.rows}) == len(vf.rows)


def test_blurry_pool_candidates_are_reported(corpus, tmp_path):
    st = FrameSettings(frames_per_clip=2, pool_interval_s=1.0, blur_threshold=1e9)  # everything is "blurry"
    vf = frames_for_video(corpus.files["bikes"], "b", 10.0, [], tmp_path / "f", tmp_path, st)
    assert not [r for r in vf.rows if r["kind"] == "pool_frame"] and len(vf.blurry) == 10


def _png(arr, mode=None):
    import io

    buf = io.BytesIO()
    (Image.fromarray(arr, mode) if mode else Image.fromarray(arr)).save(buf, format="PNG")
    return buf.getvalue()


def test_image_normalisation_modes():
    rgba = np.zeros((40, 40, 4), np.uint8)
    rgba[..., 0] = 255  # red, fully transparent -> white
    arr, note = normalise_image(_png(rgba), ImageSettings())
    assert arr.shape == (40, 40, 3) and (arr == 255).all() and "RGBA" in note
    grey16 = np.arange(40 * 40, dtype=np.uint16).reshape(40, 40) * 40
    arr, _ = normalise_image(_png(grey16), ImageSettings())
    assert arr.dtype == np.uint8 and arr.shape == (40, 40, 3) and arr.max() == 255


@pytest.mark.parametrize(("name", "reason"), [("bad_image", "decode_error"), ("tiny_image", "too_small")])
def test_bad_images_are_rejected(corpus, tmp_path, name, reason):
    with pytest.raises(ImageReject) as err:
        image_frame({"item_id": "img_x", "path": str(corpus.broken[name])}, tmp_path, tmp_path, ImageSettings())
    assert err.value.reason == reason


def test_empty_and_bomb_images(tmp_path):
    with pytest.raises(ImageReject) as err:
        normalise_image(b"", ImageSettings())
    assert err.value.reason == "empty_file"
    with pytest.raises(ImageReject) as err:
        normalise_image(_png(np.zeros((300, 300, 3), np.uint8)), ImageSettings(max_pixels=10_000))
    assert err.value.reason == "too_large"


def test_huge_image_is_downscaled_with_a_reason(corpus, tmp_path):
    row = image_frame(
        {"item_id": "img_h", "path": str(corpus.files["huge"]), "caption": "wide"},
        tmp_path,
        tmp_path,
        ImageSettings(max_side=1000),
    )
    assert (row["width"], row["height"]) == (1000, 300) and row["transform"].startswith("downscaled from 5000x1500")
    assert row["kind"] == "image" and row["caption"] == "wide" and row["timestamp_s"] is None
    assert Image.open(tmp_path / row["path"]).mode == "RGB"


def test_unreadable_image_reject_is_the_same_with_ultralytics_loaded():
    """Ultralytics patches ``Image.open`` on import (a HEIF plug-in install offline →
    ModuleNotFoundError); the vision stage shares the process, a Ray task may not. The reject must
    not depend on it, nor on the buffer's address (re-runs write the same reject)."""
    import ultralytics.utils.patches  # noqa: F401 - applies the patch

    details = set()
    for _ in range(2):
        with pytest.raises(ImageReject) as err:
            normalise_image(b"\xff\xd8 not a jpeg", ImageSettings())
        assert (err.value.reason, err.value.error_class) == ("decode_error", "UnidentifiedImageError")
        details.add(str(err.value))
    assert details == {"cannot identify image file"}


def test_frame_threads_do_not_change_the_output(corpus, tmp_path):
    """Per-frame work on threads writes the same rows and bytes as in the decoding thread, also
    when several requested times land on one decoded frame (overlapping dense clips: that frame is
    converted once, not by two threads at once, which hung PyAV's shared per-frame scaler)."""
    import threading

    clips = [{"clip_id": "a", "start_s": 0.0, "end_s": 3.0}, {"clip_id": "b", "start_s": 1.0, "end_s": 5.0}]
    st = FrameSettings(frames_per_clip=48, pool_interval_s=0.5, pool_min_gap_s=1.0, blur_threshold=1.0)
    out: dict[int, object] = {}

    def run(workers: int) -> None:
        out[workers] = frames_for_video(
            corpus.files["bikes"],
            "b",
            10.0,
            clips,
            tmp_path / f"w{workers}",
            tmp_path / f"w{workers}",
            st,
            workers=workers,
        )

    for workers in (1, 3):
        t = threading.Thread(target=run, args=(workers,), daemon=True)
        t.start()
        t.join(120)
        assert not t.is_alive(), f"frames_for_video(workers={workers}) did not finish"
    one, three = out[1], out[3]
    clip_ts = [r["timestamp_s"] for r in one.rows if r["kind"] == "clip_frame"]
    assert len(set(clip_ts)) < len(clip_ts)  # the case above does occur
    assert one.rows == three.rows and one.blurry == three.blurry
    assert any(r["kind"] == "pool_frame" for r in one.rows)
    for r in one.rows:
        assert (tmp_path / "w1" / r["path"]).read_bytes() == (tmp_path / "w3" / r["path"]).read_bytes()
    # the JPEG is the one the RGB path encodes (the BGR conversion only skips a copy)
    from forge.media.frames import encode_jpeg

    first = next(r for r in one.rows if r["kind"] == "clip_frame")
    rgb = sample_at(corpus.files["bikes"], [uniform_times(0.0, 3.0, 48)[0]])[0].image
    assert (tmp_path / "w1" / first["path"]).read_bytes() == encode_jpeg(rgb, st.jpeg_quality)


def test_pool_selection_needs_only_the_sharpest_few():
    """select_pool on every candidate = select_pool on the pool_keep_bound sharpest (and the
    blurry ones): what lets frames_for_video drop the other candidates' images as it decodes."""
    import random

    from forge.media.frames import pool_keep_bound

    rng = random.Random(7)
    for _ in range(400):
        interval = rng.choice([0.5, 1.0, 2.0])
        gap, max_n, thr = rng.choice([0.0, 1.0, 3.0, 4.5]), rng.randint(1, 8), 60.0
        times = [round(interval / 2 + i * interval, 4) for i in range(rng.randint(1, 120))]
        cands = [(t, float(rng.choice([rng.randint(0, 400), 100, 200]))) for t in times]  # ties too
        order = sorted((c for c in cands if c[1] >= thr), key=lambda c: (-c[1], c[0]))
        few = order[: pool_keep_bound(gap, max_n, interval)] + [c for c in cands if c[1] < thr]
        assert select_pool(few, gap, max_n, thr) == select_pool(cands, gap, max_n, thr)


def test_long_video_keeps_few_pool_candidates_decoded(corpus, tmp_path, monkeypatch):
    """Candidates out of the selection's reach are let go while decoding (few images held, not
    one per second of video); the rows are those of keeping every candidate."""
    import forge.media.frames as fm

    live = {"now": 0, "peak": 0}

    class Counted(fm._Done):
        def __setattr__(self, name, value):
            if name == "bgr":
                live["now"] += (value is not None) - (getattr(self, "bgr", None) is not None)
                live["peak"] = max(live["peak"], live["now"])
            super().__setattr__(name, value)

    monkeypatch.setattr(fm, "_Done", Counted)
    st = FrameSettings(frames_per_clip=2, pool_interval_s=0.25, pool_min_gap_s=0.5, pool_max_per_video=2)
    assert fm.pool_keep_bound(st.pool_min_gap_s, st.pool_max_per_video, st.pool_interval_s) == 10  # of 40
    bounded = fm.frames_for_video(corpus.files["bikes"], "b", 10.0, [], tmp_path / "a", tmp_path, st, workers=1)
    peak_bounded, live["peak"] = live["peak"], 0
    monkeypatch.setattr(fm, "pool_keep_bound", lambda *a: 10**9)
    unbounded = fm.frames_for_video(corpus.files["bikes"], "b", 10.0, [], tmp_path / "b", tmp_path, st, workers=1)
    assert peak_bounded <= 10 + 1 < live["peak"]  # + the frame being looked at
    assert len(bounded.rows) == 2
    assert [(r["frame_id"], r["sha256"]) for r in bounded.rows] == [
        (r["frame_id"], r["sha256"]) for r in unbounded.rows
    ]
