from pathlib import Path

from forge.media.download import DownloadSettings, Rejected, VideoRecord, fetch_video, probe_video
from forge.media.policy import IngestPolicy
from forge.media.sources import SourceSpec, expand_source
from forge.provenance.versioning import sha256_file

# The test server is on 127.0.0.1, which the ingest policy refuses unless allowed (docs/security.md).
LOOPBACK = IngestPolicy(allowed_hosts=("127.0.0.1",))
FAST = DownloadSettings(socket_timeout_s=5, retries=1, policy=LOOPBACK)


def _fetch(spec, url_or_path, tmp_path):
    item = expand_source(spec, policy=LOOPBACK).items
    if url_or_path is not None:
        item = [i for i in item if (i.url or i.path) == url_or_path]
    return fetch_video(item[0], spec, tmp_path, tmp_path / "media", FAST)


def test_real_download_from_loopback(server, corpus, tmp_path):
    url = f"{server.url}/bikes.mp4"
    rec = _fetch(SourceSpec(name="lb", type="urls", urls=(url,)), url, tmp_path)
    assert isinstance(rec, VideoRecord)
    f = tmp_path / rec.path
    assert f.is_file() and f.parent == tmp_path / "media" / "videos" and f.name == f"{rec.video_id}.mp4"
    assert rec.sha256 == sha256_file(corpus.files["bikes"])  # byte-identical to what the server served
    assert rec.extractor == "Generic" and rec.url == url
    assert abs(rec.duration_s - 10.0) < 0.1 and (rec.width, rec.height) == (640, 272) and not rec.has_audio
    assert rec.subtitle_path is None


def test_html5_page_brings_subtitles(server, tmp_path):
    url = f"{server.url}/watch/scenes.html"
    rec = _fetch(SourceSpec(name="lb", type="urls", urls=(url,)), url, tmp_path)
    assert isinstance(rec, VideoRecord), rec
    assert rec.has_audio and rec.subtitle_kind == "subtitles" and rec.subtitle_lang == "en"
    assert "Then the match starts!" in (tmp_path / rec.subtitle_path).read_text()


def test_dead_url_is_a_reject_not_an_exception(server, tmp_path):
    from forge.media.sources import SourceItem

    item = SourceItem("vid_x", "lb", "video", "url", url=f"{server.url}/gone.mp4", batch="lb-0000")
    res = fetch_video(item, SourceSpec(name="lb", type="urls"), tmp_path, tmp_path / "media", FAST)
    assert isinstance(res, Rejected) and res.reason == "not_found" and res.error_class == "DownloadError"


def test_unreachable_host_is_a_reject(tmp_path):
    from forge.media.sources import SourceItem

    item = SourceItem("vid_y", "lb", "video", "url", url="http://127.0.0.1:9/none.mp4", batch="lb-0000")
    res = fetch_video(item, SourceSpec(name="lb", type="urls"), tmp_path, tmp_path / "media", FAST)
    assert isinstance(res, Rejected) and res.reason in ("connection_failed", "download_failed")


def test_license_policy_applies_before_download(server, tmp_path):
    url = f"{server.url}/bikes.mp4"
    res = _fetch(SourceSpec(name="cc", type="urls", urls=(url,), license_policy="creative_commons"), url, tmp_path)
    assert isinstance(res, Rejected) and res.reason == "license"
    assert not list((tmp_path / "media").rglob("*.mp4"))  # nothing was downloaded


def test_duration_limit_without_metadata_applies_after_probe(server, tmp_path):
    url = f"{server.url}/bikes.mp4"
    res = _fetch(SourceSpec(name="short", type="urls", urls=(url,), max_duration_s=5), url, tmp_path)
    assert isinstance(res, Rejected) and res.reason == "too_long"
    assert not list((tmp_path / "media").rglob("*.mp4"))  # the file is removed again


def test_local_folder_good_and_broken_files(corpus, tmp_path):
    spec = SourceSpec(name="lv", type="folder", path=str(corpus.videos_dir), media="video", license="BSD")
    got = {
        Path(i.path).name: fetch_video(i, spec, tmp_path, tmp_path / "media", FAST) for i in expand_source(spec).items
    }
    assert {k: v.reason for k, v in got.items() if isinstance(v, Rejected)} == {
        "empty.mp4": "empty_file",
        "not_a_video.mp4": "decode_error",
        "truncated.mp4": "decode_error",
    }
    rec = got["bigbuckbunny.mp4"]
    assert isinstance(rec, VideoRecord) and rec.has_audio and rec.license == "BSD"
    assert rec.source_path == str(corpus.files["bigbuckbunny"]) and rec.sha256 == sha256_file(
        corpus.files["bigbuckbunny"]
    )


def test_local_sidecar_subtitles(corpus, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "scenes.mp4").write_bytes(corpus.files["scenes"].read_bytes())
    (folder / "scenes.en.vtt").write_text(corpus.files["scenes_vtt"].read_text())
    spec = SourceSpec(name="sc", type="folder", path=str(folder))
    rec = fetch_video(expand_source(spec).items[0], spec, tmp_path, tmp_path / "media", FAST)
    assert rec.subtitle_kind == "sidecar" and rec.subtitle_lang == "en" and (tmp_path / rec.subtitle_path).is_file()


def test_probe_reports_streams(corpus):
    p = probe_video(corpus.files["scenes"])
    assert abs(p.duration_s - 36) < 0.2 and p.has_audio and (p.width, p.height) == (320, 240)
