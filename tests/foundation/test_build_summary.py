"""The closing summary of a build, read back through the catalog of a small TableStore."""

import json

import pandas as pd

from forge.benchmarks import registry
from forge.console.build_summary import summarize, weights_caveats
from forge.storage import TableStore, refresh_catalog


def _store(tmp_path) -> TableStore:
    store = TableStore(tmp_path)
    store.write("maia_questions", pd.DataFrame({"question_id": ["q1", "q2", "q3"]}), "b-0000")
    store.write("maia_items", pd.DataFrame({"item_id": ["i1", "i2"], "benchmark": ["maia", "maia"]}), "b-0000")
    store.write("gated_items", pd.DataFrame({"item_id": ["i1"], "benchmark": ["maia"]}), "maia")
    store.write(
        "rejects",
        pd.DataFrame(
            {
                "stage": ["frames", "frames", "frames", "videos"],
                "reason": ["blurry", "blurry", "undecodable", "http_404"],
                "item_id": ["a", "b", "c", "d"],
            }
        ),
        "b-0000",
    )
    exports = pd.DataFrame(
        {
            "benchmark": ["maia", "maia"],
            "version": ["v1", "v2"],
            "version_number": [1, 2],
            "n_items": [5, 1],
            "splits": [json.dumps({"test": 5}), json.dumps({"dev": 0, "test": 1})],
            "path": ["/x/exports/maia/v1", "/x/exports/maia/v2"],
            "stub_items": [5, 1],
        }
    )
    store.write("exports", exports)
    store.write(
        "llm_ledger", pd.DataFrame({"backend": ["stub", "stub", "stub"], "kind": ["call", "call", "cache_hit"]})
    )
    refresh_catalog(store)
    return store


def test_summary_reports_stages_rejects_exports_and_caveats(tmp_path):
    store = _store(tmp_path)
    s = summarize(store, [registry.get("maia")], caveats=["weights caveat"], top=2)
    assert s.stages["maia"] == [
        ("maia_questions", 3),
        ("maia_answer_pools", 0),  # contract-only view: built nothing
        ("maia_statements", 0),
        ("maia_foils", 0),
        ("maia_items", 2),
        ("gated", 1),
    ]
    assert s.rejects_total == 4
    assert s.top_rejects == [("frames", "blurry", 2), ("frames", "undecodable", 1)]
    assert [(e["benchmark"], e["version"], e["n_items"]) for e in s.exports] == [("maia", "v2", 1)]
    assert s.caveats[0] == "weights caveat"
    assert "offline stub backend (2 requests, 1 exported stub items)" in s.caveats[1]
    text = "\n".join(s.lines())
    assert "maia  questions 3 → answer_pools 0 → statements 0 → foils 0 → items 2 → gated 1" in text
    assert "frames: blurry       2" in text
    # no card saying human-reviewed: the summary never presents the export as a reviewed one
    assert "maia v2: 1 items (dev 0, test 1), 1 stub items, NOT human-reviewed  /x/exports/maia/v2" in text
    assert "! weights caveat" in text
    assert 'make query Q="select stage, reason' in text and "duckdb " not in text
    assert "ls /x/exports/maia/v2" in text and "<" not in text.split("Next")[1]  # no placeholder to fill in


def test_summary_says_which_export_people_reviewed(tmp_path):
    """The export's card decides: "> Human-reviewed:" up front, or not; a required build that
    accepted nothing names the latest export as unreviewed (forge.export.stages)."""
    from forge.export.stages import nothing_accepted_note

    store = _store(tmp_path)
    v2 = tmp_path / "exports" / "maia" / "v2"
    v2.mkdir(parents=True)
    (v2 / "README.md").write_text("# MAIA\n\n> **Not human-reviewed.** Review policy `advisory`: 0 of 1\n")
    store.write("exports", store.read("exports").assign(path=["exports/maia/v1", "exports/maia/v2"]))
    refresh_catalog(store)
    review = {"accepted": 0, "items_needing_review": 20}
    assert nothing_accepted_note(store, "maia", review, 20) == (
        "no reviewed items yet: 0 of 20 accepted; the latest export v2 is unreviewed"
    )
    assert "1 stub items, NOT human-reviewed" in "\n".join(summarize(store, [registry.get("maia")]).lines())
    (v2 / "README.md").write_text("# MAIA\n\n> Human-reviewed: 1 of 1 items human-accepted (by 1 reviewer(s))\n")
    assert "1 stub items, human-reviewed" in "\n".join(summarize(store, [registry.get("maia")]).lines())
    assert nothing_accepted_note(store, "maia", review, 20).endswith("the latest export v2 is human-reviewed")
    assert nothing_accepted_note(store, "vague", review, 20).endswith("no vague export yet")


def test_summary_without_a_catalog_says_so(tmp_path):
    s = summarize(TableStore(tmp_path), [registry.get("maia")])
    assert not s.stages and not s.caveats
    assert any("nothing built yet" in line for line in s.lines())
    assert f"ls {tmp_path}" in "\n".join(s.lines())


def test_random_detector_weights_are_a_caveat():
    assert any("RANDOM weights (yolo11n.yaml)" in c for c in weights_caveats("yolo11n.yaml", True))
    assert not any("RANDOM" in c for c in weights_caveats("/w/yolo11n.pt", False))
    assert any("int8 text detector" in c for c in weights_caveats("/w/yolo11n.pt", False, "onnx-int8"))
    assert not any("int8" in c for c in weights_caveats("/w/yolo11n.pt", False, "auto"))
