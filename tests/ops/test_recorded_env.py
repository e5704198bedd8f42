"""One recorded environment: the demo records what its build needs in the data dir, every entry
point that loads definitions.py applies it, and an inbox drop after the demo never loses the
demo's sources (docs/operations.md, "One recorded environment")."""

import json
import os
import subprocess
import sys
from pathlib import Path

import dagster as dg
import pytest
from PIL import Image

from assets.ingest.trunk import sources
from forge.provenance.environment import apply_recorded_environment, record_environment, recorded_environment
from forge.storage import TableStore
from resources.ingest import IngestResource
from resources.storage import StorageResource

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
DEMO_VARS = ("SAMPLE_CORPUS", "SAMPLE_SERVER", "SUBTEXT_ALLOWED_HOSTS", "SUBTEXT_ALLOWED_VARIABLES")


def _list_sources(instance, data: Path) -> dg.ExecuteInProcessResult:
    ingest = IngestResource(sources_path=str(ROOT / "config" / "sources.yaml"), retries=0, socket_timeout_s=3)
    return dg.materialize(
        [sources], instance=instance, resources={"storage": StorageResource(data_dir=str(data)), "ingest": ingest}
    )


def _counts(store: TableStore) -> dict[str, int]:
    df = store.query("select source, count(*) n from source_items group by all order by 1")
    return dict(zip(df["source"], df["n"].astype(int), strict=True))


@pytest.fixture
def demo_listed(tmp_path, monkeypatch):
    """The demo's environment around one `sources` run (the server up), then left as the demo leaves it."""
    from cli.demo import prepare_demo

    monkeypatch.setenv("SUBTEXT_DEMO_PORT", "0")
    for k in (*DEMO_VARS, "SUBTEXT_RECIPE_PROFILE", "SUBTEXT_EXPORT_FORCE_STUB"):
        monkeypatch.delenv(k, raising=False)
    data, home = tmp_path / "data", tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((ROOT / ".dagster_home" / "dagster.yaml").read_text())
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    with dg.DagsterInstance.get() as instance, prepare_demo(str(data)):
        assert _list_sources(instance, data).success
    store = TableStore(data)
    before = _counts(store)
    assert {"loopback", "local_videos", "local_images", "captioned"} <= set(before)
    assert all(k not in os.environ for k in DEMO_VARS)  # the demo restored the environment
    inbox = data / "inbox" / "new photos"
    inbox.mkdir(parents=True)
    Image.new("RGB", (64, 48), "red").save(inbox / "a.png")
    return data, home, store, before


def test_the_demo_records_its_environment_without_secrets(tmp_path, monkeypatch):
    from cli.demo import prepare_demo

    monkeypatch.setenv("SUBTEXT_DEMO_PORT", "0")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-recorded")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("SUBTEXT_RECIPE_PROFILE", raising=False)
    with prepare_demo(str(tmp_path / "data")):
        pass
    text = (tmp_path / "data" / "environment.json").read_text()
    rec = json.loads(text)
    assert rec["SUBTEXT_RECIPE_PROFILE"] == "demo" and rec["OPENAI_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert {"SAMPLE_CORPUS", "SAMPLE_SERVER"} <= set(rec)
    assert "sk-never-recorded" not in text and "OPENAI_API_KEY" not in rec
    with pytest.raises(ValueError, match="secrets"):
        record_environment({"HF_TOKEN": "x"}, tmp_path / "data")


def test_environment_wins_over_the_record_and_off_ignores_it(tmp_path):
    record_environment({"SUBTEXT_RECIPE_PROFILE": "demo", "SAMPLE_CORPUS": "/c"}, tmp_path)
    env = {"SUBTEXT_RECIPE_PROFILE": "paper"}
    applied, overridden = apply_recorded_environment(tmp_path, env)
    assert applied == {"SAMPLE_CORPUS": "/c"} and overridden == {"SUBTEXT_RECIPE_PROFILE": "demo"}
    assert env["SUBTEXT_RECIPE_PROFILE"] == "paper"
    env = {"SUBTEXT_RECORDED_ENV": "off"}
    assert apply_recorded_environment(tmp_path, env) == ({}, {}) and "SAMPLE_CORPUS" not in env
    (tmp_path / "environment.json").write_text("{not json")
    with pytest.raises(ValueError, match="environment.json"):
        recorded_environment(tmp_path)


@pytest.mark.cli
def test_an_inbox_drop_after_the_demo_keeps_the_demo_sources(demo_listed):
    """A fresh process (as `make ui`'s code server runs the inbox sensor's `sources` run) loads
    definitions.py, which applies the record: the demo's folder and table sources resolve again,
    the loopback server is gone but its items keep their rows, and the dropped folder is added."""
    data, home, store, before = demo_listed
    env = {k: v for k, v in os.environ.items() if k not in DEMO_VARS and k != "SUBTEXT_RECIPE_PROFILE"}
    env.update(DAGSTER_HOME=str(home), SUBTEXT_DATA_DIR=str(data), SUBTEXT_RECORDED_ENV="on", PYTHONWARNINGS="ignore")
    env["SUBTEXT_SOURCES"] = str(ROOT / "config" / "sources.yaml")
    cmd = [str(BIN / "dagster"), "asset", "materialize", "-m", "definitions", "-d", ".", "--select", "sources"]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    after = _counts(store)
    assert {k: after[k] for k in before} == before  # not one demo item lost
    assert after.get("inbox_new_photos") == 1
    bad = store.query("select count(*) n from rejects where stage = 'sources' and reason = 'unresolved_variable'")
    assert bad["n"][0] == 0


def test_without_the_record_the_earlier_listing_is_kept_and_said(demo_listed, monkeypatch):
    """No record (an older data dir): the demo's sources cannot be resolved now, and keep their
    earlier items instead of becoming rejects; the run's metadata says which and why."""
    data, home, store, before = demo_listed
    (data / "environment.json").unlink()
    with dg.DagsterInstance.get() as instance:
        result = _list_sources(instance, data)
    assert result.success
    after = _counts(store)
    assert {k: after[k] for k in before} == before
    meta = result.asset_materializations_for_node("sources")[0].metadata["kept_from_earlier_listing"].data
    assert "unresolved_variable" in meta["local_images"]["why"]
    assert meta["local_images"]["items"] == before["local_images"]
