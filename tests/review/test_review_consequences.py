"""Each reject reason's consequence (``ReviewSpec.consequences``, forge/review/consequences.py):
declared per paper, checked at load, shown in the form, applied by the gate. Plain functions, no
server (the Label Studio flows are in test_review_consequences_flow.py)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pandas as pd
import pytest

from forge.benchmarks import registry
from forge.benchmarks.review_spec import (
    DEFAULT_REASONS,
    SOURCE_REASONS,
    Action,
    Consequence,
    Media,
    ReviewPolicy,
    ReviewSpec,
)
from forge.benchmarks.spec import BenchmarkSpec, EvalSpec
from forge.review import gate
from forge.review.consequences import source_drops
from forge.review.items import revision
from forge.review.labelconfig import review_config
from forge.review.verdicts import VERDICT_COLUMNS
from tests.review import world
from tests.review.test_review_logic import _v

# paper -> reason -> (action, stage asked again) as the papers' own procedures say (the specs cite them)
EXPECTED = {
    "vimu": {"wrong_gold": ("regenerate", "vimu_annotations"), "ambiguous": ("drop_source", None)},
    "vague": {"wrong_gold": ("regenerate", "vague_direct"), "ambiguous": ("regenerate", "vague_indirect")},
    "iibench": {"wrong_gold": ("regenerate", "iibench_items"), "no_implicit_meaning": ("drop_source", None)},
    "hummus": {"wrong_gold": ("regenerate", "hummus_annotations"), "other": ("drop_item", None)},
    # MAIA: a pair's fault goes to the stage that made the faulty field (issue #54): its statement, or its foil
    "maia": {"wrong_gold": ("regenerate", "maia_statements"), "ambiguous": ("regenerate", "maia_foils")},
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_every_paper_declares_a_consequence_per_reason(name):
    rs = registry.get(name).review
    assert set(rs.consequences) == set(rs.reasons)  # declared, every one
    assert rs.consequences_in_effect() == dict(rs.consequences)
    for reason, (action, stage) in EXPECTED[name].items():
        assert (rs.consequence(reason).action, rs.consequence(reason).stage) == (action, stage)
    for reason in ("bad_media", "offensive_or_private", "needs_outside_knowledge"):  # the source's own faults
        assert rs.consequence(reason).action == Action.DROP_SOURCE, reason


def test_vimu_wrong_gold_goes_to_the_stage_that_wrote_each_gold():
    c = registry.get("vimu").review.consequences["wrong_gold"]
    assert {cat: c.stage_for(cat) for cat in ("OE", "RM", "SV", "EG")} == {
        "OE": "vimu_questions",  # the reference answer is Stage 3's
        "RM": "vimu_annotations",
        "SV": "vimu_annotations",
        "EG": "vimu_annotations",
    }
    assert c.stages() == {"vimu_annotations", "vimu_questions"}


def _bench(review: ReviewSpec) -> BenchmarkSpec:
    ev = EvalSpec(kinds={"mcq": "mcq"}, primary_metric="accuracy")
    return BenchmarkSpec(
        name="toy", title="Toy", group="toy", recipe_assets=("toy_make", "toy_items"), eval=ev, review=review
    )


def test_a_reason_mapped_to_an_unknown_stage_fails_at_load():
    good = {r: Consequence(Action.DROP_ITEM) for r in DEFAULT_REASONS}
    assert _bench(ReviewSpec(consequences={**good, "wrong_gold": Consequence(Action.REGENERATE, "toy_make")}))
    with pytest.raises(ValueError, match=r"'wrong_gold' regenerates 'toy_questions', which is not one of its recipe"):
        _bench(ReviewSpec(consequences={**good, "wrong_gold": Consequence(Action.REGENERATE, "toy_questions")}))
    by_cat = Consequence(Action.REGENERATE, "toy_make", by_category={"OE": "toy_nowhere"})
    with pytest.raises(ValueError, match="toy_nowhere"):
        _bench(ReviewSpec(consequences={**good, "ambiguous": by_cat}))


def test_consequences_are_refused_when_incomplete_or_malformed():
    good = {r: Consequence(Action.DROP_ITEM) for r in DEFAULT_REASONS}
    with pytest.raises(ValueError, match=r"\['bad_media'\] without one"):
        ReviewSpec(consequences={r: c for r, c in good.items() if r != "bad_media"})
    with pytest.raises(ValueError, match=r"\['typo'\] not a reason"):
        ReviewSpec(consequences={**good, "typo": Consequence(Action.DROP_ITEM)})
    with pytest.raises(ValueError, match="a stage is named for regenerate"):
        Consequence(Action.REGENERATE)
    with pytest.raises(ValueError, match="a stage is named for regenerate"):
        Consequence(Action.DROP_SOURCE, "vimu_annotations")
    with pytest.raises(ValueError, match="drop_clip"):
        Consequence("drop_clip")  # type: ignore[arg-type]
    # a spec that declares none gets the defaults when asked: the source's faults drop it, the others
    # the item; the spec itself keeps what was declared (nothing)
    defaults = ReviewSpec(reasons=("bad_media", "blurry_box"))
    assert defaults.consequences == {} and defaults.consequence("typo") is None
    assert defaults.consequence("blurry_box") == Consequence(Action.DROP_ITEM)
    assert defaults.consequences_in_effect() == {
        "bad_media": Consequence(Action.DROP_SOURCE),
        "blurry_box": Consequence(Action.DROP_ITEM),
    }
    assert set(SOURCE_REASONS) <= set(DEFAULT_REASONS)


def test_the_form_shows_each_reasons_consequence():
    root = ET.fromstring(review_config(registry.get("vimu").review))
    hints = {c.get("value"): c.get("hint") for c in root.iter("Choice")}
    assert hints["bad_media"].endswith("then: drops the clip: every item of it leaves the benchmark")
    assert "then: asks vimu_annotations again for this clip (OE items: vimu_questions)" in hints["wrong_gold"]
    assert hints["other"].endswith("then: drops this item only")
    vague = ET.fromstring(review_config(registry.get("vague").review))
    assert (
        "asks vague_direct again for this image"
        in {c.get("value"): c.get("hint") for c in vague.iter("Choice")}["wrong_gold"]
    )
    help_ = next(t.get("value") for t in vague.iter("Text") if t.get("name") == "reason_help")
    assert "5  bad_media: unreadable, wrong clip or image, cut at the wrong place; then: drops the image" in help_


def _clips(tmp_path) -> pd.DataFrame:
    """Two clips of two items each (unit_id = the clip), one item of a third clip not reviewed."""
    from forge.storage import TableStore

    items = world.maia(TableStore(tmp_path), n=5)
    items["unit_id"] = ["c1", "c1", "c2", "c2", "c1"]
    items["split"] = ["test", "test", "test", "test", "dev"]
    return items


def test_source_drops_take_every_item_of_the_source(tmp_path):
    items = _clips(tmp_path)
    spec = ReviewSpec()
    assert set(source_drops(items, {"m1": "bad_media"}, spec)) == {"m1", "m2", "m5"}
    assert source_drops(items, {"m1": "bad_media"}, spec)["m2"].rejected_item == "m1"
    assert source_drops(items, {"m1": "wrong_gold", "m3": "other"}, spec) == {}  # not the source's fault


def test_the_gate_rejects_a_dropped_sources_items_with_the_reviewers_reason(tmp_path):
    items = _clips(tmp_path)
    revs = {r["item_id"]: revision(r) for r in items.to_dict("records")}
    rows = [
        _v("m1", revs["m1"], "a", "reject", n=1, reason="bad_media"),
        _v("m2", revs["m2"], "a", "accept", n=2),  # accepted, but its clip is dropped
        _v("m3", revs["m3"], "a", "reject", n=3, reason="wrong_gold"),  # its item only
        _v("m4", revs["m4"], "a", "accept", n=4),
    ]
    spec = ReviewSpec(splits=("test",))
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), spec, tmp_path)
    assert res.status == {"m1": "rejected", "m2": "rejected", "m3": "rejected", "m4": "accepted", "m5": "rejected"}
    assert res.reasons == {"m1": "bad_media", "m2": "bad_media", "m3": "wrong_gold", "m5": "bad_media"}
    assert {i: (d.source, d.rejected_item) for i, d in res.source_drops.items()} == {
        i: ("c1", "m1") for i in ("m1", "m2", "m5")
    }
    kept, out = gate.export_filter(res, ReviewPolicy.ADVISORY)
    assert kept.item_id.tolist() == ["m4"] and out["rejected"] == ["m1", "m2", "m3", "m5"]
    # once the reviewer takes the reject back, the clip is back (nothing was deleted)
    rows[0] = _v("m1", revs["m1"], "a", "accept", n=5)
    res = gate.resolve(items, pd.DataFrame(rows, columns=VERDICT_COLUMNS), spec, tmp_path)
    assert res.status["m2"] == "accepted" and not res.source_drops


def test_describe_names_the_source_by_media():
    assert Consequence(Action.DROP_SOURCE).describe(Media.IMAGE).startswith("drops the image")
    assert Consequence(Action.REGENERATE, "x").describe(Media.VIDEO) == "asks x again for this clip"
