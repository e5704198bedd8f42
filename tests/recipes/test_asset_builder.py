"""assets/recipes/asset_builder.py: a recipe asset's name is written once, on its function, and the
builder declares what the hand-written ``@dg.asset`` block of a recipe stage declared."""

from __future__ import annotations

import importlib
import inspect

import dagster as dg
import pytest

from assets.common import SINGLE_RUN, batches, stage_check_specs, table_metadata
from assets.recipes.asset_builder import recipe_asset
from forge.benchmarks import registry


def _checks(asset: dg.AssetsDefinition) -> dict[str, bool]:
    return {c.name: c.blocking for c in asset.check_specs}


def test_an_llm_stage_is_named_by_its_function_and_gets_the_recipe_defaults():
    @recipe_asset(
        group="hummus",
        llm=True,
        tables=("hummus_regions",),
        deps=["hummus_pairs"],
        code_version="abc123",
        description="annotations",
        checks={"refine_outcomes": "rounds used"},
    )
    def hummus_annotations(context): ...

    spec = hummus_annotations.specs_by_key[dg.AssetKey("hummus_annotations")]
    assert hummus_annotations.keys == {dg.AssetKey("hummus_annotations")}
    assert spec.group_name == "hummus" and spec.kinds == {"openai"}
    assert hummus_annotations.op.pool == "llm"
    assert hummus_annotations.partitions_def is batches and hummus_annotations.backfill_policy == SINGLE_RUN
    assert [d.asset_key for d in spec.deps] == [dg.AssetKey("hummus_pairs")]
    assert spec.code_version == "abc123" and spec.description == "annotations"
    assert _checks(hummus_annotations) == {
        "contract_hummus_annotations": True,
        "contract_hummus_regions": True,
        "reject_rate": False,
        "refine_outcomes": False,
    }
    own = next(c for c in hummus_annotations.check_specs if c.name == "refine_outcomes")
    assert own.asset_key == dg.AssetKey("hummus_annotations") and own.description == "rounds used"
    assert spec.metadata["tables"] == "hummus_annotations, hummus_regions"
    assert spec.metadata["dagster/column_schema"] == table_metadata(["hummus_annotations"])["dagster/column_schema"]


def test_a_code_stage_has_no_pool_and_a_shared_table_is_checked_but_not_listed():
    @recipe_asset(
        group="maia",
        kinds=("parquet",),
        shared_tables=("maia_pool_stats",),
        deps=["maia_questions"],
        code_version="v",
        description="pools",
    )
    def maia_answer_pools(context): ...

    spec = maia_answer_pools.specs_by_key[dg.AssetKey("maia_answer_pools")]
    assert spec.kinds == {"python", "parquet"}
    assert maia_answer_pools.op.pool is None
    assert set(_checks(maia_answer_pools)) == {"contract_maia_answer_pools", "contract_maia_pool_stats", "reject_rate"}
    assert spec.metadata["tables"] == "maia_answer_pools"


def test_the_builder_equals_the_hand_written_block():
    def vague_direct(context): ...

    built = recipe_asset(group="vague", llm=True, deps=["vague_candidates"], code_version="c", description="d")(
        vague_direct
    )
    by_hand = dg.asset(
        group_name="vague",
        kinds={"openai"},
        pool="llm",
        partitions_def=batches,
        backfill_policy=SINGLE_RUN,
        deps=["vague_candidates"],
        code_version="c",
        check_specs=stage_check_specs("vague_direct", ["vague_direct"]),
        metadata=table_metadata(["vague_direct"]),
        description="d",
    )(vague_direct)
    assert repr(built.specs_by_key) == repr(by_hand.specs_by_key)
    assert repr(list(built.check_specs)) == repr(list(by_hand.check_specs))
    assert (built.op.pool, built.backfill_policy) == (by_hand.op.pool, by_hand.backfill_policy)


@pytest.mark.parametrize("package", [s.package for s in registry.specs() if s.package])
def test_every_paper_declares_its_stages_through_the_builder(package):
    source = inspect.getsource(importlib.import_module(f"{package}.assets"))
    assert "@dg.asset(" not in source, f"{package}.assets writes a recipe stage's decorator by hand"
    assert "@recipe_asset(" in source


def test_a_stage_declares_its_own_reject_ceiling_and_a_users_override_wins(tmp_path):
    from assets.common import reject_rate_ceiling
    from assets.recipes.iibench.assets import iibench_implication
    from assets.recipes.maia.assets import maia_answer_pools
    from assets.recipes.vague.assets import vague_candidates

    def ceiling(asset):
        (spec,) = [s for s in asset.check_specs if s.name == "reject_rate"]
        return getattr(spec.metadata["ceiling"], "value", spec.metadata["ceiling"])

    # the two filters meant to drop most inputs declare 1.0 in their papers' packages; others the default
    assert (ceiling(iibench_implication), ceiling(vague_candidates), ceiling(maia_answer_pools)) == (1.0, 1.0, 0.95)
    f = tmp_path / "quality.yaml"
    f.write_text("reject_rate: {ceiling: 0.9, min_seen: 5, stages: {some_stage: 0.5}}\n")
    assert reject_rate_ceiling("some_stage", 1.0, f) == (0.5, 5)  # the user's file wins
    assert reject_rate_ceiling("other", 1.0, f) == (1.0, 5) and reject_rate_ceiling("other", None, f) == (0.9, 5)
