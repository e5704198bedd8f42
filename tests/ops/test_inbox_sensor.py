"""The drop-folder sensor: new inbox entries → one `sources` run per file version → per-batch runs."""

from __future__ import annotations

import json
import os

import dagster as dg
import pytest
from PIL import Image

from assets.common import batches
from assets.ingest.trunk import sources
from forge.media.inbox import entry_sources_file, scan_inbox
from forge.media.sources import load_sources
from forge.storage import TableStore
from resources.ingest import IngestResource
from resources.storage import StorageResource
from sensors.inbox import inbox_sensor


@pytest.fixture(scope="module")
def defs():
    from definitions import build_defs

    return build_defs()


@pytest.fixture
def inbox(tmp_path):
    box = tmp_path / "data" / "inbox"
    (box / "holiday photos").mkdir(parents=True)
    for i, colour in enumerate(("red", "blue")):
        Image.new("RGB", (64, 48), colour).save(box / "holiday photos" / f"p{i}.png")
    (box / "links.txt").write_text(
        "# two dead links: listing them is a reject, not a failure\n"
        "http://127.0.0.1:9/a.mp4\nhttp://127.0.0.1:9/b.mp4\n"
    )
    (box / "more.yaml").write_text(
        f"sources:\n  - {{name: dropped, type: folder, path: '{box / 'holiday photos'}', media: image}}\n"
    )
    (box / "notes.md").write_text("ignored: not a supported entry")
    (box / ".partial.txt").write_text("ignored: hidden")
    return box


def _tick(defs, instance, storage, cursor=None):
    ctx = dg.build_sensor_context(instance=instance, cursor=cursor, resources={"storage": storage}, definitions=defs)
    return inbox_sensor(ctx)


def test_entries_become_sources_files(inbox):
    entries = {e.name: e for e in scan_inbox(inbox)}
    assert sorted(entries) == ["holiday photos", "links.txt", "more.yaml"]
    specs, rejects = load_sources(entry_sources_file(entries["links.txt"]))
    assert not rejects and specs[0].name == "inbox_links" and specs[0].type == "urls"
    specs, _ = load_sources(entry_sources_file(entries["holiday photos"]))
    assert specs[0].name == "inbox_holiday_photos" and specs[0].type == "folder" and specs[0].recursive
    assert entry_sources_file(entries["more.yaml"]) == inbox / "more.yaml"


def test_inbox_registers_once_then_builds_new_batches(defs, inbox, tmp_path):
    instance = dg.DagsterInstance.ephemeral()
    storage = StorageResource(data_dir=str(tmp_path / "data"))

    # Tick 1: one `sources` run per new entry, keyed by file + mtime.
    first = _tick(defs, instance, storage)
    assert sorted(r.run_key.rsplit(":", 1)[0] for r in first.run_requests) == [
        "inbox:holiday photos",
        "inbox:links.txt",
        "inbox:more.yaml",
    ]
    assert all(r.asset_selection == [dg.AssetKey("sources")] for r in first.run_requests)
    cursor = json.loads(first.cursor)
    assert set(cursor["files"]) == {"holiday photos", "links.txt", "more.yaml"}

    # The requested run: `sources` lists config + inbox and registers the batches.
    main = tmp_path / "main.yaml"
    main.write_text("sources: []\n")
    instance.add_dynamic_partitions(batches.name, ["configured-0000"])  # a batch not from the inbox
    result = dg.materialize(
        [sources],
        instance=instance,
        resources={"storage": storage, "ingest": IngestResource(sources_path=str(main), retries=0, socket_timeout_s=2)},
    )
    assert result.success
    registered = set(instance.get_dynamic_partitions(batches.name))
    assert {"inbox_holiday_photos-0000", "dropped-0000"} <= registered
    store = TableStore(tmp_path / "data")
    assert store.query("select count(*) n from source_items where source = 'inbox_holiday_photos'")["n"][0] == 2
    dead = store.query("select count(*) n from rejects where stage = 'sources' and related_id = 'source:inbox_links'")
    assert dead["n"][0] == 2

    # Tick 2: files unchanged → no `sources` run; each unbuilt inbox batch → one per-batch run.
    second = _tick(defs, instance, storage, first.cursor)
    assert {r.run_key for r in second.run_requests} == {"batch:inbox_holiday_photos-0000", "batch:dropped-0000"}
    req = next(r for r in second.run_requests if r.partition_key == "dropped-0000")
    graph = defs.resolve_asset_graph()
    assert dg.AssetKey("videos") in req.asset_selection and dg.AssetKey("frames") in req.asset_selection
    assert all(graph.get(k).partitions_def == batches for k in req.asset_selection)

    # A built batch is not requested again; a touched file is registered again (new run key).
    instance.report_runless_asset_event(dg.AssetMaterialization("videos", partition="dropped-0000"))
    links = inbox / "links.txt"
    os.utime(links, (links.stat().st_atime, links.stat().st_mtime + 10))
    third = _tick(defs, instance, storage, second.cursor)
    keys = sorted(r.run_key for r in third.run_requests)
    assert keys == ["batch:inbox_holiday_photos-0000", f"inbox:links.txt:{links.stat().st_mtime}"]


def test_empty_inbox_skips(defs, tmp_path):
    result = _tick(defs, dg.DagsterInstance.ephemeral(), StorageResource(data_dir=str(tmp_path)))
    assert not result.run_requests
    assert "nothing new" in result.skip_reason.skip_message


def test_a_bad_inbox_file_turns_the_tick_red_naming_file_line_and_reason(defs, tmp_path):
    """Malformed YAML and a URL list with garbage still get their `sources` run (a reject), and
    the sensor turns red, naming each file, line and reason, on every tick with nothing else to
    do, until the files are fixed; other work is never held back by them."""
    from sensors.inbox import BadInboxFile

    box = tmp_path / "data" / "inbox"
    box.mkdir(parents=True)
    (box / "broken.yaml").write_text("sources:\n  - name: a\n    type: [urls\n")
    (box / "links.txt").write_text("# my list\nhttps://example.org/v.mp4\nthis is not a url at all\n")
    (box / "wrongtype.yaml").write_text("sources:\n  - {name: x, type: folder}\n  - {name: y, type: video}\n")
    instance = dg.DagsterInstance.ephemeral()
    storage = StorageResource(data_dir=str(tmp_path / "data"))

    first = _tick(defs, instance, storage)  # new files: their `sources` runs launch (the run records rejects)
    assert len(first.run_requests) == 3
    with pytest.raises(BadInboxFile) as red:  # nothing else to do: the tick fails, with every reason
        _tick(defs, instance, storage, first.cursor)
    message = str(red.value)
    assert "broken.yaml line 4: malformed YAML" in message
    assert "links.txt line 3: not a URL ('this is not a url at all')" in message
    assert "wrongtype.yaml line 3: `type` must be one of urls, search, folder, table, got 'video'" in message
    assert "line 2" not in message.split("links.txt")[1].split("\n")[0]  # the good URL is not blamed

    (box / "broken.yaml").unlink()
    (box / "links.txt").write_text("https://example.org/v.mp4\n")
    (box / "wrongtype.yaml").unlink()
    fixed = _tick(defs, instance, storage, first.cursor)
    assert [r.run_key.rsplit(":", 1)[0] for r in fixed.run_requests] == ["inbox:links.txt"]
    assert not _tick(defs, instance, storage, fixed.cursor).run_requests  # green and quiet again
