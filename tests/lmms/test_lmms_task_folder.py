"""The task folder an export writes (forge/export/lmms.py) and what its runtime refuses
(forge/evals/lmms_task.py), in-process: what lmms-eval cannot express is left out with the
reason in the card, stub exports write none unless forced, and an open-ended task without a
judge endpoint fails with a clear message instead of scoring 0."""

from __future__ import annotations

import pandas as pd
import pytest
import yaml

from forge.benchmarks.registry import get
from forge.evals.lmms_task import ExportTask, JudgeMissing
from forge.export.write import write_export
from tests.evals.test_e2e import CARD, build_items, publish_items
from tests.llm_double import Reply
from tests.llm_double.server import message_text


def _export(data, bench, **kw):
    items = build_items(data)[bench].assign(split="test", group_id=lambda d: d["item_id"])
    return write_export(
        exports_dir=data / "exports",
        data_dir=data,
        spec=get(bench),
        items=items,
        provenance=pd.DataFrame(columns=["item_id", "source_item_id", "license", "source"]),
        split_order=["test"],
        stage_config={},
        card_context=CARD,
        **kw,
    )


def test_vague_folder_holds_expressible_settings_and_the_card_says_why_others_are_not(tmp_path):
    out = _export(tmp_path, "vague")
    folder = out.path / "lmms"
    names = sorted(p.stem for p in folder.glob("*.yaml"))
    assert names == ["subtext_vague_v1", "subtext_vague_v1_lm", "subtext_vague_v1_vlm", "subtext_vague_v1_vlm_cot"]
    task = yaml.safe_load((folder / "subtext_vague_v1_vlm.yaml").read_text().replace("!function ", ""))
    # the export's own file, relative to the data dir (lmms-eval runs from there, offline)
    assert task["dataset_path"] == "parquet"
    assert task["dataset_kwargs"]["data_files"]["test"] == "exports/vague/v1/parquet/test.parquet"
    assert (tmp_path / task["dataset_kwargs"]["data_files"]["test"]).is_file()
    group = yaml.safe_load((folder / "subtext_vague_v1.yaml").read_text())
    assert group["task"] == names[1:]
    utils = (folder / "utils.py").read_text()
    assert "from cli.lmms_task import task_for" in utils and "def extract" not in utils
    card = (out.path / "README.md").read_text()
    assert "lmms-eval --model openai" in card and "--include_path exports/vague/v1/lmms" in card
    for left_out in ("`SM`: two requests per item", "`SM+CoT`: two requests", "`LM-free-form`: free-form"):
        assert left_out in card


def test_stub_export_writes_no_task_folder_unless_forced(tmp_path):
    refused = _export(tmp_path / "a", "iibench", stub_items=6, forced_stub=False)
    assert not (refused.path / "lmms").exists()
    assert "6 stub item(s) and the export was not forced" in (refused.path / "README.md").read_text()
    forced = _export(tmp_path / "b", "iibench", stub_items=6, forced_stub=True)
    assert (forced.path / "lmms" / "subtext_iibench_v1_none.yaml").is_file()


@pytest.fixture
def maia(tmp_path):
    publish_items(tmp_path, "maia", build_items(tmp_path)["maia"])
    return ExportTask(tmp_path / "exports" / "maia" / "v1", get("maia"))


def test_open_ended_without_judge_endpoint_fails_with_a_clear_message(maia, monkeypatch):
    for k in ("OPENAI_API_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(k, raising=False)
    assert maia.item_ids("black_video", ("text",)) == {"ma_oe0", "ma_oe1"}
    with pytest.raises(JudgeMissing, match="set OPENAI_API_URL .* and/or OPENAI_API_KEY, and MODEL_VERSION"):
        maia.row("black_video", maia.by_id["ma_oe0"], "to catch the bus")


def test_open_ended_is_judged_at_lmms_evals_judge_endpoint(maia, llm_double, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_URL", llm_double.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-judge")
    monkeypatch.setenv("MODEL_VERSION", "judge-model")
    monkeypatch.setenv("SUBTEXT_LMMS_JUDGE_CACHE", str(tmp_path / "judge.sqlite"))

    def verdict(body):
        text = message_text(body)
        if "Candidate Answer: no idea" in text:
            return Reply.json({"label": "Maybe"})  # not a label the schema allows, even when asked again
        return Reply.json({"label": "Correct" if "Candidate Answer: to catch the bus" in text else "Incorrect"})

    llm_double.responder = verdict
    right = maia.row("black_video", maia.by_id["ma_oe0"], "to catch the bus")
    wrong = maia.row("black_video", maia.by_id["ma_oe1"], "he likes running")
    assert (right["judge_ok"], right["score"]) == (True, 1.0)
    assert (wrong["judge_ok"], wrong["score"]) == (True, 0.0)
    failed = maia.row("black_video", maia.by_id["ma_oe1"], "no idea")
    assert (failed["judge_ok"], failed["score"]) == (False, None)  # unscored, never 0
    assert {r["body"]["model"] for r in llm_double.requests} == {"judge-model"}
