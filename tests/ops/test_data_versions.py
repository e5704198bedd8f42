"""Data versions from content: every table-writing asset reports a DataVersion hashed from the
rows it wrote (``assets.common.publish`` → ``forge.provenance.versioning.rows_version``), so re-running a
stage that writes identical rows leaves its descendants Synced, and a change of rows does not."""

import dagster as dg
import pandas as pd
from dagster._core.definitions.assets.graph.asset_graph import AssetGraph
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContextForTest
from PIL import Image

from assets.ingest.trunk import sources, videos
from forge.provenance.versioning import rows_version
from resources.ingest import IngestResource
from resources.storage import StorageResource


def _status(instance, key: str, partition: str) -> StaleStatus:
    graph = AssetGraph.from_assets([sources, videos])
    resolver = CachingStaleStatusResolver(instance, graph, LoadingContextForTest(instance))
    return resolver.get_status(dg.AssetKey(key), partition)


def test_identical_rows_keep_descendants_synced_and_new_rows_do_not(tmp_path):
    images = tmp_path / "data" / "imgs"
    images.mkdir(parents=True)
    for i, colour in enumerate(("red", "green")):
        Image.new("RGB", (64, 48), colour).save(images / f"{i}.png")
    (tmp_path / "s.yaml").write_text(f"sources:\n  - {{name: tiny, type: folder, path: '{images}', media: image}}\n")
    resources = {
        "storage": StorageResource(data_dir=str(tmp_path / "data")),
        "ingest": IngestResource(sources_path=str(tmp_path / "s.yaml")),
    }
    instance = dg.DagsterInstance.ephemeral()

    def run(selection):
        result = dg.materialize(
            [sources, videos],
            selection=selection,
            instance=instance,
            resources=resources,
            partition_key=None if selection == [sources] else "tiny-0000",
        )
        assert result.success
        return result.asset_materializations_for_node(selection[0].key.path[-1])

    first = run([sources])
    run([videos])
    assert _status(instance, "videos", "tiny-0000") == StaleStatus.FRESH

    again = run([sources])  # same files: same rows (listed_at differs, and is not content)
    assert again[0].tags["dagster/data_version"] == first[0].tags["dagster/data_version"]
    assert _status(instance, "videos", "tiny-0000") == StaleStatus.FRESH

    Image.new("RGB", (64, 48), "blue").save(images / "2.png")  # new rows
    changed = run([sources])
    assert changed[0].tags["dagster/data_version"] != first[0].tags["dagster/data_version"]
    assert _status(instance, "videos", "tiny-0000") == StaleStatus.STALE


def test_rows_version_ignores_timestamps_of_making_only():
    at = pd.Timestamp("2026-01-01", tz="UTC")
    a = {"t": {"p": pd.DataFrame({"x": [1, 2], "tags": [["a"], []], "listed_at": [at, at]})}}
    b = {"t": {"p": pd.DataFrame({"x": [1, 2], "tags": [["a"], []], "listed_at": [at + pd.Timedelta("1h")] * 2})}}
    c = {"t": {"p": pd.DataFrame({"x": [1, 3], "tags": [["a"], []], "listed_at": [at, at]})}}
    assert rows_version(a) == rows_version(b) != rows_version(c)
    assert rows_version(a) != rows_version({"t": {"q": a["t"]["p"]}})  # the partition is part of it
