"""Hostile inbox files and sources YAML: variables, paths, links, special files, bombs.

Every probe runs the real `sources` asset over the inbox (what the inbox sensor's run does)
and asserts the entry is refused with its reason, nothing outside the allowed roots is read,
and the secret never appears in any table, metadata or log line.
"""

from __future__ import annotations

import logging
import os

import pytest

from forge.media.inbox import scan_inbox
from forge.media.policy import IngestPolicy
from forge.media.sources import load_sources

from .conftest import SECRET, every_table_text, rejects, run_sources


def test_env_secret_in_a_url_is_refused_by_name_and_never_leaves(site, secret_env, caplog, counting_server):
    (site.inbox / "exfil.yaml").write_text(
        "sources:\n"
        "  - name: exfil\n"
        "    type: urls\n"
        f"    urls: ['{counting_server.url}/bikes.mp4?k=${{OPENAI_API_KEY}}']\n"
    )
    with caplog.at_level(logging.DEBUG):
        result = run_sources(site, allowed_hosts=["127.0.0.1"])  # even an allowed host must not get the key
    rej = rejects(site)
    assert rej["source:exfil"][0] == "variable_not_allowed"
    assert "OPENAI_API_KEY" in rej["source:exfil"][1]
    assert counting_server.requests == []  # nothing was fetched
    assert SECRET not in every_table_text(site.store)  # sources.spec, rejects, source_items
    md = result.asset_materializations_for_node("sources")[0].metadata
    assert SECRET not in repr(md)
    assert SECRET not in caplog.text


@pytest.mark.parametrize("placeholder", ["${AWS_SECRET_ACCESS_KEY}", "${HOME}", "${SUBTEXT_API_KEY}", "${PATH}"])
def test_only_non_secret_subtext_variables_expand(site, secret_env, monkeypatch, placeholder):
    monkeypatch.setenv("SUBTEXT_API_KEY", SECRET)
    f = site.inbox / "v.yaml"
    f.write_text(f"sources:\n  - {{name: v, type: folder, path: '{placeholder}/x'}}\n")
    specs, bad = load_sources(f, policy=IngestPolicy(roots=(str(site.root),)))
    assert specs == [] and bad[0].reason == "variable_not_allowed"
    assert placeholder[2:-1] in bad[0].detail and SECRET not in bad[0].detail


def test_subtext_setting_and_explicitly_allowed_variable_expand(site, monkeypatch):
    monkeypatch.setenv("SUBTEXT_MEDIA_ROOT", str(site.inbox))
    monkeypatch.setenv("TEAM_FOLDER", str(site.inbox))
    f = site.inbox / "ok.yaml"
    f.write_text(
        "sources:\n  - {name: a, type: folder, path: '${SUBTEXT_MEDIA_ROOT}'}\n"
        "  - {name: b, type: folder, path: '${TEAM_FOLDER}'}\n"
    )
    specs, bad = load_sources(f, policy=IngestPolicy(roots=(str(site.root),), allowed_variables=("TEAM_FOLDER",)))
    assert [s.name for s in specs] == ["a", "b"] and bad == []


def test_relative_escape_from_a_table_is_refused_before_reading(site):
    # The row names a real image outside the data dir: the old code ingested it.
    (site.inbox / "t").mkdir()
    (site.inbox / "t" / "captions.csv").write_text(
        "image,caption\n../../../outside/private.png,steal\n../../../../../../../../etc/passwd,host\n"
    )
    (site.inbox / "table.yaml").write_text("sources:\n  - {name: tbl, type: table, path: t/captions.csv}\n")
    run_sources(site)
    reasons = sorted(r for r, _ in rejects(site).values())
    assert reasons == ["path_outside_roots", "path_outside_roots"]
    items = site.store.read("source_items") if site.store.exists("source_items") else None
    assert items is None or items.empty


@pytest.mark.parametrize("path", ["../../outside", "/etc", "../../../../../../../../../etc"])
def test_folder_outside_the_roots_is_refused(site, path):
    (site.inbox / "f.yaml").write_text(f"sources:\n  - {{name: f, type: folder, path: '{path}', media: auto}}\n")
    run_sources(site)
    assert rejects(site)["source:f"][0] == "path_outside_roots"


def test_link_inside_a_dropped_folder_is_refused(site):
    folder = site.inbox / "photos"
    folder.mkdir()
    (folder / "cat.png").symlink_to(site.outside / "private.png")
    (folder / "up").symlink_to(site.outside, target_is_directory=True)
    run_sources(site)
    rej = rejects(site)
    assert [r for r, _ in rej.values()] == ["symlink_escape"]
    assert not site.store.exists("source_items") or site.store.read("source_items").empty


@pytest.mark.parametrize("kind", ["folder", "yaml", "txt"])
def test_inbox_entry_that_links_outside_is_refused_unopened(site, kind):
    target = {"folder": site.outside, "yaml": site.outside / "private.txt", "txt": site.outside / "private.txt"}[kind]
    name = {"folder": "mirror", "yaml": "x.yaml", "txt": "x.txt"}[kind]
    (site.inbox / name).symlink_to(target)
    entry = scan_inbox(site.inbox)[0]
    assert entry.kind == "refused" and entry.reason == "symlink_escape"
    run_sources(site)
    assert rejects(site)[f"inbox:{name}"][0] == "symlink_escape"
    assert SECRET not in every_table_text(site.store)


def test_fifo_in_the_inbox_is_refused_without_blocking(site):
    os.mkfifo(site.inbox / "pipe.txt")  # opening it for reading would block forever
    os.mkfifo(site.inbox / "pipe.yaml")
    run_sources(site)
    rej = rejects(site)
    assert rej["inbox:pipe.txt"][0] == rej["inbox:pipe.yaml"][0] == "not_a_regular_file"


def test_inbox_sensor_tick_with_hostile_entries_only_lists_them(site, secret_env, counting_server):
    import dagster as dg

    from resources.storage import StorageResource
    from sensors.inbox import inbox_sensor

    os.mkfifo(site.inbox / "pipe.txt")
    (site.inbox / "escape").symlink_to(site.outside, target_is_directory=True)
    (site.inbox / "exfil.txt").write_text(f"{counting_server.url}/bikes.mp4?k=${{OPENAI_API_KEY}}\n")
    ctx = dg.build_sensor_context(
        instance=dg.DagsterInstance.ephemeral(), resources={"storage": StorageResource(data_dir=str(site.root))}
    )
    result = inbox_sensor(ctx)
    assert sorted(r.run_key.rsplit(":", 1)[0] for r in result.run_requests) == [
        "inbox:escape",
        "inbox:exfil.txt",
        "inbox:pipe.txt",
    ]
    assert counting_server.requests == []
    assert not (site.inbox / ".sources" / "inbox_escape.yaml").exists()


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("- just\n- a list\n", "invalid_source"),
        ("root:x:0:0:root:/root:/bin/bash\n", "invalid_source"),
        ("sources: {not: a list}\n", "invalid_source"),
        ("sources:\n  - 42\n  - [a, b]\n", "invalid_source"),
        ("sources: [\n", "invalid_yaml"),
        ("\x00\xff\xfe garbage", "invalid_yaml"),
    ],
)
def test_malformed_sources_files_are_rejects_not_crashes(site, text, reason):
    (site.inbox / "bad.yaml").write_text(text, encoding="utf-8", errors="surrogateescape")
    run_sources(site)  # raise_on_error: the asset must not fail
    assert reason in {r for r, _ in rejects(site).values()}


def test_yaml_alias_bomb_is_refused(site):
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("sources:\n  - {name: bomb, type: urls, urls: *a8}")
    (site.inbox / "bomb.yaml").write_text("\n".join(lines) + "\n")
    run_sources(site)
    assert rejects(site)["source:bomb"][0] == "invalid_source"


def test_oversized_url_list_is_refused(site):
    (site.inbox / "huge.txt").write_text("# padding\n" * 200_000)  # ~2 MB
    run_sources(site, max_text_file_bytes=1_000_000)
    assert rejects(site)["source:inbox_huge"][0] == "too_large"


def test_demo_config_passes_the_policy_through_its_allowances(tmp_path, monkeypatch):
    """The shipped config/sources.yaml under the demo's environment: every source lists, and
    the only rejects are the sample corpus' deliberate ones (a dead URL, a missing image)."""
    from cli.demo import prepare_demo
    from forge.media.batch import list_sources
    from forge.storage import RejectLog
    from resources.ingest import IngestResource

    repo = __import__("pathlib").Path(__file__).resolve().parents[2]
    monkeypatch.chdir(repo)  # the resource's default path is relative to the repository root
    data = tmp_path / "data"
    monkeypatch.setenv("SUBTEXT_DEMO_PORT", "0")
    with prepare_demo(str(data)):
        log = RejectLog("sources", "all")
        res = IngestResource(retries=0, socket_timeout_s=3)
        listing = list_sources(res.sources_path, {}, log, policy=res.policy(data))
    assert set(listing.items["source"]) == {"loopback", "local_videos", "local_images", "captioned"}
    assert sorted(r["reason"] for r in log.rows) == ["missing_image", "not_found"]


@pytest.mark.parametrize(
    "entry",
    [
        "{name: a, type: urls, urls: 'http://example.org/a.mp4'}",  # a string, not a list
        "{name: a, type: folder, path: x, batch_size: lots}",
        "{name: a, type: folder, path: x, batch_size: 0}",
        "{name: a, type: folder, path: [x, y]}",
        "{name: a, type: folder, path: x, max_items: -1}",
        "{name: a, type: folder, path: x, media: everything}",
        "{name: " + "a" * 200 + ", type: folder, path: x}",
    ],
)
def test_wrongly_typed_fields_are_invalid_sources(site, entry):
    (site.inbox / "typed.yaml").write_text(f"sources:\n  - {entry}\n")
    run_sources(site)
    assert {r for r, _ in rejects(site).values()} == {"invalid_source"}
