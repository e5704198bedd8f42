import json

import pytest

from forge.media.policy import IngestPolicy
from forge.media.sources import (
    SourceSpec,
    batch_key,
    classify_error,
    expand_source,
    license_allowed,
    load_sources,
)


def test_placeholders_and_invalid_sources_become_rejects(tmp_path, corpus):
    f = tmp_path / "sources.yaml"
    f.write_text(
        "defaults: {batch_size: 3}\n"
        "sources:\n"
        "  - {name: imgs, type: folder, path: '${CORPUS}/images', media: image}\n"
        "  - {name: web, type: urls, urls: ['${NOT_SET_ANYWHERE_XYZ}/a.mp4']}\n"
        "  - {name: 'bad name', type: folder, path: x}\n"
        "  - {name: odd, type: folder, path: x, colour: blue}\n"
    )
    specs, rejects = load_sources(f, {"CORPUS": str(corpus.root)})
    assert [s.name for s in specs] == ["imgs"]
    assert specs[0].batch_size == 3 and specs[0].path == str(corpus.images_dir)
    assert {r.source: r.reason for r in rejects} == {
        "web": "unresolved_variable",
        "bad name": "invalid_source",
        "odd": "invalid_source",
    }


def test_folder_expansion_batches_and_max_items(corpus):
    spec = SourceSpec(name="imgs", type="folder", path=str(corpus.images_dir), media="image", batch_size=4, max_items=9)
    exp = expand_source(spec)
    assert len(exp.items) == 9
    assert [it.batch for it in exp.items] == ["imgs-0000"] * 4 + ["imgs-0001"] * 4 + ["imgs-0002"]
    assert all(it.kind == "image" and it.item_id.startswith("img_") for it in exp.items)
    n_files = len(list(corpus.images_dir.iterdir()))
    assert sum(r.reason == "max_items" for r in exp.rejects) == n_files - 9
    again = expand_source(spec)
    assert [i.item_id for i in again.items] == [i.item_id for i in exp.items]  # stable ids


def test_folder_auto_skips_sidecars(corpus):
    exp = expand_source(SourceSpec(name="web", type="folder", path=str(corpus.web_dir), recursive=True))
    names = sorted(it.path.rsplit("/", 1)[-1] for it in exp.items)
    assert names == ["bikes.mp4", "scenes.mp4"]  # .vtt and .html are not media


def test_csv_and_jsonl_tables(corpus, tmp_path):
    exp = expand_source(SourceSpec(name="cap", type="table", path=str(corpus.table_path)))
    assert len(exp.items) == 3 and all(it.caption for it in exp.items)
    assert [r.reason for r in exp.rejects] == ["missing_image"]
    jl = tmp_path / "pairs.jsonl"
    img = corpus.table_path.parent / "images" / "rocket.png"
    jl.write_text(
        json.dumps({"img": str(img), "text": "to the moon"}) + "\n" + json.dumps({"img": "", "text": "x"}) + "\n"
    )
    exp = expand_source(SourceSpec(name="jl", type="table", path=str(jl), image_column="img", caption_column="text"))
    assert [(it.path, it.caption) for it in exp.items] == [(str(img), "to the moon")]
    assert [r.reason for r in exp.rejects] == ["missing_image"]


def test_url_listing_with_ytdlp_and_dead_link(server):
    spec = SourceSpec(
        name="lb", type="urls", urls=(f"{server.url}/bikes.mp4", f"{server.url}/nope.mp4", f"{server.url}/bikes.mp4")
    )
    exp = expand_source(spec, policy=IngestPolicy(allowed_hosts=("127.0.0.1",)))  # loopback is refused by default
    assert [it.url for it in exp.items] == [f"{server.url}/bikes.mp4"]
    assert exp.items[0].title == "bikes" and exp.items[0].batch == batch_key("lb", 0)
    assert sorted(r.reason for r in exp.rejects) == ["listed_twice", "not_found"]


@pytest.mark.parametrize(
    ("message", "reason"),
    [
        ("ERROR: [youtube] abc: Private video. Sign in if you've been granted access", "private"),
        ("ERROR: [youtube] abc: Video unavailable. This video has been removed by the uploader", "removed"),
        ("The uploader has not made this video available in your country; geo restriction", "geo_blocked"),
        ("Unable to download webpage: HTTP Error 404: Not Found", "not_found"),
        ("Read timed out.", "timeout"),
        ("something else entirely", "download_failed"),
    ],
)
def test_error_classification(message, reason):
    assert classify_error(RuntimeError(message))[0] == reason


def test_license_policy():
    assert license_allowed("creative_commons", "Creative Commons Attribution license (reuse allowed)")[0]
    assert license_allowed("creative_commons", "CC BY-SA 4.0")[0]
    assert not license_allowed("creative_commons", "Standard YouTube License")[0]
    assert not license_allowed("creative_commons", None)[0]
    assert license_allowed("any", None)[0]


def test_a_bad_jsonl_line_refuses_that_line_and_imports_the_others(corpus, tmp_path):
    """Issue #55: the line is refused with its number; the table is not."""
    from forge.media.batch import list_sources
    from forge.storage import RejectLog

    img = corpus.table_path.parent / "images"
    table = tmp_path / "pairs.jsonl"
    table.write_text(
        json.dumps({"img": str(img / "rocket.png"), "text": "to the moon"})
        + "\n\n"  # a blank line is no row
        + '{"img": "'
        + str(img / "chelsea.png")
        + '", "text": "unterminated\n'  # line 3: broken JSON
        + '["a", "list"]\n'  # line 4: JSON, not an object
        + json.dumps({"img": str(img / "deadline.png"), "text": "line\u2028separator kept"})  # line 5
        + "\n"
    )
    (tmp_path / "sources.yaml").write_text(
        f"sources:\n  - {{name: jl, type: table, path: '{table}', image_column: img, caption_column: text}}\n"
    )
    log = RejectLog("sources", "all")
    listing = list_sources(tmp_path / "sources.yaml", {}, log)
    assert sorted(listing.items["caption"]) == ["line\u2028separator kept", "to the moon"]
    bad = sorted((r["reason"], r["detail"]) for r in log.rows)
    assert [r for r, _ in bad] == ["bad_line", "bad_line"], bad
    assert bad[0][1].startswith("pairs.jsonl line 3: not JSON"), bad
    assert bad[1][1] == "pairs.jsonl line 4: a JSON list, not an object", bad
    assert len({r["item_id"] for r in log.rows}) == 2  # one reject per line, each its own id
    again = RejectLog("sources", "all")
    list_sources(tmp_path / "sources.yaml", {}, again)
    assert [r["item_id"] for r in again.rows] == [r["item_id"] for r in log.rows]  # re-runs: same ids


def test_a_bad_csv_line_refuses_that_line_and_imports_the_others(corpus, tmp_path):
    table = tmp_path / "captions.csv"
    images = corpus.table_path.parent / "images"
    table.write_text(
        "image,caption\n"
        f"{images}/rocket.png,ready for launch\n"
        f"{images}/chelsea.png,an unquoted, comma shifts the caption\n"  # line 3: 3 fields
        f'{images}/deadline.png,"a quoted caption\nover two lines"\n'  # lines 4-5: one row
        f"{images}/rocket.png\n"  # line 6: 1 field
        f'{images}/rocket.png,"quoted"then more\n'  # line 7: text after a closing quote
        "nul\x00byte.png,x\n"  # line 8: a path no file can have
        f"{images}/chelsea.png,the last line\n"
        f'{images}/rocket.png,"never closed\n'  # line 10: swallows the rest of the file
        f"{images}/deadline.png,would be line 11\n",
        encoding="utf-8",
    )
    exp = expand_source(SourceSpec(name="cap", type="table", path=str(table)))
    assert [it.caption for it in exp.items] == ["ready for launch", "a quoted caption\nover two lines", "the last line"]
    assert sorted((r.reason, r.detail) for r in exp.rejects) == [
        ("bad_line", "captions.csv line 10: (to line 11) not readable as CSV (unexpected end of data)"),
        ("bad_line", "captions.csv line 3: 3 fields where the header has 2"),
        ("bad_line", "captions.csv line 6: 1 fields where the header has 2"),
        ("bad_line", "captions.csv line 7: not readable as CSV (',' expected after '\"')"),
        ("invalid_path", "line 8: embedded null byte"),
    ]


def test_an_unresolved_placeholder_refuses_that_url_not_the_source(tmp_path, monkeypatch):
    monkeypatch.delenv("SUBTEXT_NOT_SET_XYZ", raising=False)
    monkeypatch.setenv("SUBTEXT_MIRROR", "https://example.org")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-expanded")
    f = tmp_path / "sources.yaml"
    f.write_text(
        "sources:\n"
        "  - name: web\n"
        "    type: urls\n"
        "    urls: ['https://example.org/a.mp4', '${SUBTEXT_NOT_SET_XYZ}/b.mp4',\n"
        "           '${SUBTEXT_MIRROR}/c.mp4', 'https://example.org/d.mp4?k=${OPENAI_API_KEY}']\n"
    )
    specs, rejects = load_sources(f)
    [spec] = specs
    assert spec.urls == ("https://example.org/a.mp4", "https://example.org/c.mp4")
    assert dict(spec.placeholders) == {"SUBTEXT_MIRROR": "https://example.org"}
    got = {r.detail.rsplit("': ", 1)[0] + "'": (r.source, r.reason) for r in rejects}
    assert got == {
        "urls[1] '${SUBTEXT_NOT_SET_XYZ}/b.mp4'": ("web", "unresolved_variable"),
        "urls[3] 'https://example.org/d.mp4?k=${OPENAI_API_KEY}'": ("web", "variable_not_allowed"),
    }
    assert all(r.item_id.startswith("vid_") for r in rejects)  # the URL's own id, not the source's
    assert not any("sk-never-expanded" in r.detail for r in rejects)
