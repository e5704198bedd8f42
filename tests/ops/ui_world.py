"""A small build recorded in a persistent Dagster instance, for the browser tests to open in the UI.

Three real slices of the pipeline, each through its own assets (no hand-written metadata):

- ingest: the sample corpus's image folder → sources → videos → clips → frames → frame_hashes →
  duplicates → text_ratio (EasyOCR), the batch assets as one single-run backfill over every batch,
  so each partition's materialization must carry its own numbers and contact sheet;
- export: a hand-made VAGUE items table → splits → gated → export (stub items, forced), whose
  materialization carries the dataset card with its plots inlined;
- leaderboard: published II-Bench items → ``iibench_eval`` for the offline stub model →
  ``iibench_eval_report`` (the leaderboard tables).

Each slice writes its own data dir: what the UI shows comes from the instance's event log.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import yaml
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

ROOT = Path(__file__).resolve().parents[2]

SOURCES_YAML = """
sources:
  - {name: imgs, type: folder, path: "${SAMPLE_CORPUS}/images", media: image, batch_size: 6}
"""


def open_instance(home: Path) -> dg.DagsterInstance:
    """The instance a webserver started with ``DAGSTER_HOME=home`` reads (the project's dagster.yaml)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text((ROOT / ".dagster_home" / "dagster.yaml").read_text())
    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))


def build_ingest(instance: dg.DagsterInstance, root: Path, corpus_root: Path, ocr) -> list[str]:
    """The image trunk and OCR over every batch; returns the batch keys."""
    from assets.ingest.filters import duplicates, frame_hashes, text_ratio
    from assets.ingest.trunk import clips, frames, sources, videos
    from resources.ingest import IngestResource
    from resources.storage import StorageResource

    root.mkdir(parents=True, exist_ok=True)
    (root / "sources.yaml").write_text(SOURCES_YAML)
    resources = {
        "storage": StorageResource(data_dir=str(root / "data")),
        "ingest": IngestResource(
            sources_path=str(root / "sources.yaml"),
            variables={"SAMPLE_CORPUS": str(corpus_root)},
            allowed_roots=[str(corpus_root)],
        ),
        "ocr": ocr,
    }
    assert dg.materialize([sources], instance=instance, resources=resources).success
    keys = instance.get_dynamic_partitions("batches")
    backfill = {ASSET_PARTITION_RANGE_START_TAG: keys[0], ASSET_PARTITION_RANGE_END_TAG: keys[-1]}
    trunk = [videos, clips, frames, frame_hashes]
    assert dg.materialize(
        [sources, *trunk], selection=trunk, instance=instance, resources=resources, tags=backfill
    ).success
    assert dg.materialize(
        [frame_hashes, duplicates], selection=[duplicates], instance=instance, resources=resources
    ).success
    assert dg.materialize(
        [duplicates, text_ratio], selection=[text_ratio], instance=instance, resources=resources, tags=backfill
    ).success
    return keys


def build_export(instance: dg.DagsterInstance, root: Path) -> str:
    """VAGUE splits → gated → export of stub-made items (forced); returns the export asset name."""
    from assets.splits.factory import benchmark_defs
    from forge.storage import TableStore
    from resources.llm import LLMResource
    from resources.storage import StorageResource
    from tests.splits.helpers import make_world

    paper = "vague"
    store = TableStore(root / "data")
    specs = [
        {
            "item_id": f"it{i:02d}",
            "category": ["irony", "metaphor", "humour"][i % 3],
            "source_item_id": f"v{i // 2:02d}",
            "img": 100 + i,
            "backend": "stub",
            "license": "CC BY 4.0",
            "question": f"What does picture {i} imply?",
        }
        for i in range(12)
    ]
    make_world(store, specs, benchmark=paper)
    defs = benchmark_defs(paper)
    assets = [a for a in defs.assets if a.key.path[-1].endswith(("splits", "gated", "export"))]
    export = f"{paper}_export"
    result = dg.materialize(
        [*assets, *defs.asset_checks],
        selection=[a.key for a in assets],
        instance=instance,
        resources={
            "storage": StorageResource(data_dir=str(store.data_dir)),
            "llm": LLMResource(backend="stub", cache_path=str(root / "llm_cache.sqlite")),
        },
        run_config={"ops": {export: {"config": {"force_stub": True}}}},
        raise_on_error=False,
    )
    assert result.asset_materializations_for_node(export), "the export did not materialize"
    return export


def build_leaderboard(instance: dg.DagsterInstance, root: Path) -> str:
    """II-Bench evaluated with the offline stub model, then its leaderboard report."""
    from assets.evals.assets import build_defs
    from resources.embedder import EmbedderResource
    from resources.llm import LLMResource
    from resources.storage import StorageResource
    from tests.evals.test_e2e import build_items, dev_items, publish_items

    data = root / "data"
    publish_items(data, "iibench", build_items(data)["iibench"], dev_items(data))
    cfg = yaml.safe_load((ROOT / "config" / "evals.yaml").read_text())
    cfg["bootstrap"]["n"] = 20
    (root / "evals.yaml").write_text(yaml.safe_dump(cfg))
    defs = build_defs(ROOT / "config" / "models.yaml", root / "evals.yaml")
    resources = {
        "llm": LLMResource(backend="stub", cache_path=str(root / "c.sqlite")),
        "storage": StorageResource(data_dir=str(data)),
        "embedder": EmbedderResource(),
    }
    by_name = {a.key.to_user_string(): a for a in defs.assets}
    ev, report = by_name["iibench_eval"], by_name["iibench_eval_report"]
    assert dg.materialize([ev], partition_key="stub-offline", instance=instance, resources=resources).success
    assert dg.materialize([ev, report], selection=[report], instance=instance, resources=resources).success
    return report.key.to_user_string()
