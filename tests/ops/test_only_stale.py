"""An unchanged re-build leaves Synced assets alone (`cli.build --only-stale`): the roots read
the outside world again, and since data versions come from content, everything below them is
FRESH and skipped; a changed input runs its descendants again."""

import dagster as dg
from dagster._core.definitions.assets.graph.asset_graph import AssetGraph
from PIL import Image

from assets.ingest.trunk import clips, frames, sources, videos
from cli.build import build
from jobs.stages import stage_jobs
from resources.ingest import IngestResource
from resources.storage import StorageResource

SELECT = ["sources", "videos", "clips", "frames"]


def _defs(tmp_path) -> dg.Definitions:
    resources = {
        "storage": StorageResource(data_dir=str(tmp_path / "data")),
        "ingest": IngestResource(sources_path=str(tmp_path / "s.yaml")),
    }
    assets = [sources, videos, clips, frames]
    graph = AssetGraph.from_assets(assets)
    return dg.Definitions(assets=assets, resources=resources, jobs=stage_jobs(graph))


def _runs(instance) -> list[str]:
    return sorted(r.job_name for r in instance.get_runs())


def test_an_unchanged_rebuild_runs_only_the_roots(tmp_path, capsys):
    images = tmp_path / "data" / "imgs"
    images.mkdir(parents=True)
    for i, colour in enumerate(("red", "green")):
        Image.new("RGB", (64, 48), colour).save(images / f"{i}.png")
    (tmp_path / "s.yaml").write_text(
        f"sources:\n  - {{name: tiny, type: folder, path: '{images}', media: image, batch_size: 1}}\n"
    )
    instance = dg.DagsterInstance.ephemeral()
    defs = _defs(tmp_path)

    assert build(SELECT, instance=instance, only_stale=True, defs=defs)
    first = _runs(instance)
    assert len(first) == 2 and "ingest_fanin_job" in first  # sources, then the batch stages
    capsys.readouterr()

    assert build(SELECT, instance=instance, only_stale=True, defs=defs)  # nothing changed
    assert sorted(_runs(instance)) == sorted([*first, "ingest_fanin_job"])  # only `sources` again
    assert "up to date, skipped: clips, frames, videos" in capsys.readouterr().out

    Image.new("RGB", (64, 48), "blue").save(images / "1.png")  # a changed file: new rows below sources
    assert build(SELECT, instance=instance, only_stale=True, defs=defs)
    assert len(_runs(instance)) == 5  # sources, and the batch stages again


VERSION = {"root": "v1"}
CHILD_RUNS: list[str] = []


@dg.asset
def reader() -> dg.MaterializeResult:  # a root: reads the outside world, runs every time
    return dg.MaterializeResult(data_version=dg.DataVersion(VERSION["root"]))


@dg.asset(deps=[reader])
def summary() -> dg.MaterializeResult:
    CHILD_RUNS.append("summary")
    return dg.MaterializeResult(data_version=dg.DataVersion("s"))


def test_a_child_in_the_same_run_waits_for_its_parent_then_is_checked_again(monkeypatch, capsys):
    """`summary` shares a run with `reader` (both unpartitioned): it is checked again after
    `reader` ran, so the same data version leaves it alone and a new one runs it."""
    defs = dg.Definitions(assets=[reader, summary])
    instance = dg.DagsterInstance.ephemeral()
    CHILD_RUNS.clear()
    assert build(instance=instance, only_stale=True, defs=defs)
    assert build(instance=instance, only_stale=True, defs=defs)
    assert CHILD_RUNS == ["summary"] and "up to date, skipped: summary" in capsys.readouterr().out
    monkeypatch.setitem(VERSION, "root", "v2")
    assert build(instance=instance, only_stale=True, defs=defs)
    assert CHILD_RUNS == ["summary", "summary"]
