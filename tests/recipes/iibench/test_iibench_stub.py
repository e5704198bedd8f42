"""II-Bench on the offline stub backend (the demo): placeholder verdicts are recorded, not applied."""

import json

from forge.llm.stub import ADVISORY_NOTE
from resources.llm import LLMResource
from tests.recipes.iibench.test_iibench_assets import _run, store  # noqa: F401 - fixture


def test_iibench_stub_run_yields_items(store, tmp_path):
    res = _run(store, LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")))
    assert res.success
    imp = store.read("iibench_implication")
    # the trunk's filters still apply (img_d duplicate, img_e text) but the stub verdict drops nothing
    assert sorted(imp["frame_id"]) == ["img_a", "img_b", "img_c", "img_f"] and imp["keep"].all()
    rej = store.read("rejects")
    assert not set(rej["reason"]) & {
        "no_implication",
        "invalid_labels",
        "duplicate_options",
        "distractor_also_correct",
        "distractor_implausible",
        "answer_not_supported",
        "set_failed_code_check",
        "refine_max_rounds",
    }
    items = store.read("iibench_items")
    assert set(items["unit_id"]) == set(imp["frame_id"]) and (items["backend"] == "stub").all()
    # what the checks / judge would have said is on record (placeholder options repeat each other)
    assert any(json.loads(e).get("advisory") for e in items["extra"])
    att = store.read("llm_attempts")
    assert att[att["step"] != "generate"]["advisory"].all()
    md = res.asset_materializations_for_node("iibench_items")[0].metadata
    assert md["stub_verdicts"].value == ADVISORY_NOTE
