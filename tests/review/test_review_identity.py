"""Never delete what is not provably ours (docs/review.md, "Identity and reconciliation"): Label
Studio's database deleted and re-created between two pushes of two benchmarks with live tasks
(the new database hands out the same project and task ids again) costs no live task of either,
and the catalog reports the reconciliation."""

from __future__ import annotations

import shutil
import socket

import dagster as dg
import pandas as pd
import pytest

from assets.people.factory import people_defs
from forge.benchmarks.registry import get
from forge.people import server as review_server
from forge.people.client import LabelStudio
from forge.review import loop
from forge.storage import TableStore, open_catalog
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource
from tests.review import scripted as sr
from tests.review import world

pytestmark = pytest.mark.slow  # a real Label Studio server

NAMES = ("maia", "vague")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def push(data, name: str) -> dict:
    resources = {
        "storage": StorageResource(data_dir=str(data)),
        "review": ReviewResource(),
        "llm": LLMResource(backend="stub", cache_path=str(data / "cache" / "llm_cache.sqlite")),
    }
    assets = [a for n in NAMES for a in people_defs(n, "review").assets]
    res = dg.materialize(assets, selection=[f"{name}_review_results", f"{name}_review_tasks"], resources=resources)
    return res.asset_materializations_for_node(f"{name}_review_tasks")[0].metadata


def live(ls: LabelStudio) -> dict[str, set[str]]:
    """project title → the item ids of its tasks."""
    return {p["title"]: {t["data"]["item_id"] for t in ls.tasks(p["id"])} for p in ls.projects()}


def q(data, sql: str) -> pd.DataFrame:
    with open_catalog(TableStore(data)) as con:
        return con.execute(sql).df()


@pytest.fixture
def replaceable(ls_server, tmp_path, monkeypatch):
    """A Label Studio of the test's own, and a pristine copy of its empty database: restoring the
    copy re-creates the database, which numbers projects and tasks from the same point again."""
    shared, ls, _srv = ls_server
    data = tmp_path / "data"
    (data / "review").mkdir(parents=True)
    for p in ls.projects():
        ls.request("DELETE", f"/api/projects/{p['id']}")
    pristine = tmp_path / "pristine"
    shutil.copytree(shared / "review" / "label-studio", pristine)
    shutil.copytree(pristine, data / "review" / "label-studio")
    shutil.copy(shared / "review" / "admin.json", data / "review" / "admin.json")
    monkeypatch.setenv("SUBTEXT_REVIEW_PORT", str(_free_port()))
    monkeypatch.setenv("SUBTEXT_DATA_DIR", str(data))
    cfg = tmp_path / "review.yaml"
    cfg.write_text("defaults: {policy: required}\nbenchmarks:\n  maia: {reviewers: 2}\n  vague: {reviewers: 2}\n")
    monkeypatch.setenv("SUBTEXT_REVIEW_CONFIG", str(cfg))
    monkeypatch.delenv("SUBTEXT_REVIEW_POLICY", raising=False)
    procs = [review_server.start(data, timeout=300)[0]]

    def recreate() -> None:
        """Stop the server, delete its database, start it on a database made anew."""
        procs[-1].terminate()
        procs[-1].wait(timeout=120)
        shutil.rmtree(data / "review" / "label-studio")
        shutil.copytree(pristine, data / "review" / "label-studio")
        procs.append(review_server.start(data, timeout=300)[0])

    try:
        yield data, recreate
    finally:
        for proc in procs:  # only the processes this fixture started
            if proc.poll() is None:
                proc.terminate()
                proc.wait(timeout=120)


def test_a_recreated_database_costs_no_live_task_of_any_benchmark(replaceable):
    data, recreate = replaceable
    store = TableStore(data)
    world.maia(store, n=4)
    world.vague(store, n=3)
    srv = review_server.server(data)
    ls = LabelStudio(srv.url, srv.token)
    push(data, "maia")
    push(data, "vague")
    maia_review, vague_review = loop.title(get("maia"), "review"), loop.title(get("vague"), "review")
    assert live(ls)[maia_review] == {"m1", "m2", "m3", "m4"} and live(ls)[vague_review] == {"v1", "v2", "v3"}
    r1 = sr.reviewer(ls, "r1@identity.test")
    m1 = next(t for t in ls.tasks(ls.project_by_title(maia_review)["id"]) if t["data"]["item_id"] == "m1")
    sr.submit(ls, m1, r1, sr.ACCEPT)
    push(data, "maia")  # the accept is read into the catalog
    old_maia_projects = set(q(data, "select project_id from review_task_ledger where benchmark = 'maia'").project_id)

    recreate()
    assert loop.todo(ls, store, "maia")[-1].startswith("Label Studio database replaced")
    # vague first: the new database gives its projects the ids maia's ledger recorded
    push(data, "vague")
    vague_now = {p["id"] for p in ls.projects() if p["title"].startswith(vague_review.split(" review")[0])}
    assert old_maia_projects & vague_now, "the re-created database must reuse maia's project ids"
    md = push(data, "maia")
    push(data, "vague")

    tasks = live(ls)
    assert tasks[vague_review] == {"v1", "v2", "v3"}  # nothing of vague deleted by maia's push
    assert tasks[maia_review] == {"m1", "m2", "m3", "m4"}
    assert not len(q(data, "select * from review_task_ledger where event = 'deleted'"))
    rec = md["reconciliation"].value
    assert rec["state"] == "replaced" and rec["lost"] == 4 and "database was replaced" in rec["message"]
    rows = q(data, "select benchmark, state, lost, message from review_reconciliation order by recorded_at")
    maia_rows = rows[rows.benchmark == "maia"]
    assert maia_rows.state.tolist() == ["replaced"] and maia_rows.lost.tolist() == [4]
    lost = q(data, "select item_id from review_task_ledger where benchmark = 'maia' and event = 'lost'")
    assert sorted(lost.item_id) == ["m1", "m2", "m3", "m4"]
    v = q(data, "select item_id, stale, stale_reason from verdicts where benchmark = 'maia'")
    assert v.item_id.tolist() == ["m1"] and not v.stale.any(), v.to_dict("records")  # read before: it counts
    # the next push agrees with the tool: no further reconciliation row
    push(data, "maia")
    assert len(q(data, "select * from review_reconciliation where benchmark = 'maia'")) == 1
    assert live(ls)[vague_review] == {"v1", "v2", "v3"}
