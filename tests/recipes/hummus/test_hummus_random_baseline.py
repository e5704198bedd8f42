"""Hummus §6.1's random Classification baseline (100 iterations) is a leaderboard row of its own:
model ``random`` with its n and bootstrap CI, once per setting, whatever model was evaluated."""

from __future__ import annotations

import dagster as dg
import yaml

from forge.storage import TableStore, open_catalog, refresh_catalog
from resources.embedder import EmbedderResource
from resources.storage import StorageResource
from tests.evals.test_e2e import ROOT, build_items, publish_items


def test_random_baseline_is_a_leaderboard_row(tmp_path):
    from assets.evals.assets import build_defs
    from resources.llm import LLMResource

    data = tmp_path / "data"
    store = TableStore(data)
    items = build_items(data)["hummus"]
    publish_items(data, "hummus", items)
    cfg = yaml.safe_load((ROOT / "config" / "evals.yaml").read_text())
    cfg["bootstrap"]["n"] = 50
    (tmp_path / "evals.yaml").write_text(yaml.safe_dump(cfg))
    defs = build_defs(ROOT / "config" / "models.yaml", tmp_path / "evals.yaml")
    sel = [a for a in defs.assets if a.key.to_user_string() == "hummus_eval"]
    resources = {
        "llm": LLMResource(backend="stub", cache_path=str(tmp_path / "c.sqlite")),
        "storage": StorageResource(data_dir=str(data)),
        "embedder": EmbedderResource(),
    }
    for _ in range(2):  # a re-run replaces the baseline's rows, never adds a second copy
        assert dg.materialize(sel, partition_key="stub-offline", resources=resources).success

    scores = store.read("eval_scores")
    computed = scores[(scores["slice"] == "baseline=random") & (scores["metric"] == "f1_avg")]
    assert len(computed), "the scorer computes the §6.1 baseline next to the model"
    refresh_catalog(store)
    with open_catalog(store) as con:
        lb = con.sql("select * from leaderboard where benchmark = 'hummus'").df()
    rnd = lb[lb["model"] == "random"]
    model_settings = set(lb.loc[lb["model"] == "stub-offline", "setting"])
    # one random row per setting that has Classification items, on the primary metric, with n and CI
    assert set(rnd["setting"]) == set(computed["setting"]) and set(rnd["setting"]) <= model_settings
    assert rnd.groupby("setting").size().eq(1).all() and set(rnd["metric"]) == {"f1_avg"}
    n_cls = int((items["task"] == "classification").sum())
    assert (rnd["n"] == n_cls).all() and (rnd["backend"] == "random").all()
    assert (
        rnd["ci_low"].notna().all() and (rnd["ci_low"] <= rnd["value"]).all() and (rnd["value"] <= rnd["ci_high"]).all()
    )
    want = computed.set_index("setting")["value"]
    assert rnd.set_index("setting")["value"].to_dict() == want.to_dict()  # the scorer's own figures
