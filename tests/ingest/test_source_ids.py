"""Item ids come from the sources file as declared, not from the values its ``${...}`` took.

Two demos on two data dirs get two server ports (and two corpus paths): the same declaration
must give the same items, or every clip, benchmark item and export differs between the runs.
"""

import shutil

import pytest

from forge.media.batch import spec_from_json
from forge.media.download import ProbeError, probe_video
from forge.media.loopback import serve
from forge.media.policy import IngestPolicy
from forge.media.sources import SourceSpec, declared_locator, expand_source, load_sources

SOURCES = (
    "sources:\n"
    "  - name: lb\n"
    "    type: urls\n"
    "    urls: ['${SAMPLE_SERVER}/bikes.mp4', '${SAMPLE_SERVER}/gone/missing.mp4']\n"
    "  - {name: vids, type: folder, path: '${SAMPLE_CORPUS}/videos'}\n"
    "  - {name: cap, type: table, path: '${SAMPLE_CORPUS}/table/captions.csv'}\n"
)


def _expand(sources_file, root, server):
    policy = IngestPolicy(allowed_hosts=("127.0.0.1",), allowed_variables=("SAMPLE_SERVER", "SAMPLE_CORPUS"))
    policy = policy.with_roots(root, sources_file.parent)
    specs, rejects = load_sources(sources_file, {"SAMPLE_SERVER": server.url, "SAMPLE_CORPUS": str(root)}, policy)
    assert rejects == []
    return {s.name: expand_source(s, policy=policy) for s in specs}


def test_two_ports_and_two_data_dirs_give_the_same_item_ids(corpus, tmp_path):
    f = tmp_path / "sources.yaml"
    f.write_text(SOURCES)
    other = shutil.copytree(corpus.root, tmp_path / "elsewhere" / "sample_corpus")
    with serve(corpus.web_dir) as one, serve(other / "web") as two:
        assert one.url != two.url
        a, b = _expand(f, corpus.root, one), _expand(f, other, two)
    for name in ("lb", "vids", "cap"):
        assert [i.item_id for i in a[name].items] == [i.item_id for i in b[name].items], name
        assert [(r.item_id, r.reason) for r in a[name].rejects] == [(r.item_id, r.reason) for r in b[name].rejects]
    assert len(a["lb"].items) == 1 and len(a["vids"].items) > 1 and len(a["cap"].items) > 1
    assert [r.reason for r in a["lb"].rejects] == ["not_found"]  # the dead link: same reject id on both
    # Only the id is taken from the declaration: each run still fetches from its own server.
    assert a["lb"].items[0].url == f"{one.url}/bikes.mp4" and b["lb"].items[0].url == f"{two.url}/bikes.mp4"
    assert "/bikes.mp4" in one.requests and "/bikes.mp4" in two.requests


def test_declared_locator_writes_used_values_back():
    spec = SourceSpec(
        name="lb",
        type="urls",
        urls=("http://127.0.0.1:8811/a.mp4",),
        placeholders=(("HOST", "http://127.0.0.1:8811"), ("ROOT", "http://127.0.0.1:8811/sub")),
    )
    assert declared_locator(spec, "http://127.0.0.1:8811/a.mp4") == "${HOST}/a.mp4"
    assert declared_locator(spec, "http://127.0.0.1:8811/sub/b.mp4") == "${ROOT}/b.mp4"  # longest value first
    assert declared_locator(spec, "https://example.org/c.mp4") == "https://example.org/c.mp4"
    plain = SourceSpec(name="lb", type="urls", urls=("http://127.0.0.1:8811/a.mp4",))
    assert declared_locator(plain, "http://127.0.0.1:8811/a.mp4") == "http://127.0.0.1:8811/a.mp4"  # a literal URL


def test_placeholders_are_recorded_and_survive_the_sources_table(tmp_path):
    f = tmp_path / "sources.yaml"
    f.write_text("sources:\n  - {name: lb, type: urls, urls: ['${SUBTEXT_X}/a.mp4', 'https://example.org/b.mp4']}\n")
    (spec,), _ = load_sources(f, {"SUBTEXT_X": "http://127.0.0.1:9"})
    assert spec.urls == ("http://127.0.0.1:9/a.mp4", "https://example.org/b.mp4")
    assert spec.placeholders == (("SUBTEXT_X", "http://127.0.0.1:9"),)
    back = spec_from_json(spec.to_json())  # how the videos stage reads the spec
    assert back == spec and hash(back) == hash(spec)
    g = tmp_path / "declares.yaml"
    g.write_text("sources:\n  - {name: lb, type: urls, urls: [], placeholders: [[A, b]]}\n")
    specs, rejects = load_sources(g)
    assert specs == [] and [r.reason for r in rejects] == ["invalid_source"]  # set by the loader only


def test_a_decode_error_names_the_file_not_the_data_dir(corpus):
    bad = corpus.videos_dir / "not_a_video.mp4"
    with pytest.raises(ProbeError) as err:
        probe_video(bad)
    assert err.value.reason == "decode_error" and "not_a_video.mp4" in str(err.value)
    assert str(corpus.root) not in str(err.value)  # the same reject row in any data dir
