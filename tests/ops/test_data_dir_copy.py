"""A data dir copied elsewhere reports its own paths (issue #55): the ``exports`` table and
``environment.json`` store paths relative to the data dir, and readers resolve them against the
data dir they read. Rows and records written before (absolute paths) still read."""

import json
import shutil

from forge.benchmarks import registry
from forge.console.build_summary import summarize
from forge.export.write import exports_frame
from forge.provenance.environment import record_environment, recorded_environment
from forge.storage import TableStore, refresh_catalog
from forge.storage.paths import resolve_stored, stored_path
from tests.ops.test_dataset_card import _export

BENCH = "iibench"


def _export_lines(store: TableStore) -> list[str]:
    return [line for line in summarize(store, [registry.get(BENCH)]).lines() if BENCH in line or "ls " in line]


def test_a_copied_data_dir_summary_names_the_copys_exports(tmp_path):
    data, _, version_dir = _export(tmp_path, BENCH)
    store = TableStore(data)
    frame = exports_frame(data / "exports", BENCH, data)
    assert frame["path"].tolist() == ["exports/iibench/v1"]  # relative to the data dir
    store.write("exports", frame, BENCH)
    refresh_catalog(store)
    assert str(version_dir) in "\n".join(_export_lines(store))

    copy = tmp_path / "elsewhere" / "data"
    shutil.copytree(data, copy)
    lines = "\n".join(_export_lines(TableStore(copy)))
    assert f"{copy}/exports/iibench/v1" in lines, lines
    assert str(data) + "/" not in lines, lines  # nothing of the original is named

    # a table written before paths were relative: its absolute row is read as the copy's own
    old = TableStore(copy)
    old.write("exports", frame.assign(path=str(version_dir)), BENCH)
    refresh_catalog(old)
    lines = "\n".join(_export_lines(old))
    assert f"{copy}/exports/iibench/v1" in lines and str(data) + "/" not in lines, lines


def test_the_recorded_environment_follows_a_copied_data_dir(tmp_path):
    data = tmp_path / "data"
    corpus = data / "sample_corpus"
    corpus.mkdir(parents=True)
    outside = tmp_path / "corpus_elsewhere"
    values = {"SAMPLE_CORPUS": str(corpus), "SUBTEXT_SOURCES": str(outside), "SAMPLE_SERVER": "http://127.0.0.1:8765"}
    record_environment(values, data)
    doc = json.loads((data / "environment.json").read_text())
    assert doc["SAMPLE_CORPUS"] == "sample_corpus" and doc["data_dir_relative"] == ["SAMPLE_CORPUS"]
    assert doc["SUBTEXT_SOURCES"] == str(outside)  # outside the data dir: does not move with it
    assert recorded_environment(data) == values

    copy = tmp_path / "moved" / "data"
    shutil.copytree(data, copy)
    assert recorded_environment(copy) == dict(values, SAMPLE_CORPUS=str(copy / "sample_corpus"))

    # a record written before: absolute values, no list, read as they are
    (copy / "environment.json").write_text(json.dumps({"SAMPLE_CORPUS": str(corpus)}))
    assert recorded_environment(copy) == {"SAMPLE_CORPUS": str(corpus)}


def test_stored_paths_round_trip_and_leave_outside_paths_absolute(tmp_path):
    data = tmp_path / "d"
    (data / "exports" / "x" / "v2").mkdir(parents=True)
    assert stored_path(data / "exports" / "x" / "v2", data) == "exports/x/v2"
    assert stored_path(tmp_path / "other", data) == str(tmp_path / "other")
    assert resolve_stored("exports/x/v2", data) == data / "exports" / "x" / "v2"
    assert resolve_stored("/gone/d/exports/x/v2", data) == data / "exports" / "x" / "v2"  # re-anchored
    assert resolve_stored("/gone/nothing/here", data).as_posix() == "/gone/nothing/here"  # unknown: as stored
