"""The spend ledger of two machines on one bucket: each keeps its SQLite ledger in its own work
dir and publishes the rows the bucket lacks (one content-keyed object per publish); the
``llm_ledger`` snapshot table, written by either machine, holds both machines' requests, each
once, however often each publishes. A local data dir snapshots its own ledger, publishing nothing."""

from __future__ import annotations

import json

from assets.llm_support import snapshot_ledger
from forge.llm.ledger import SpendLedger, ledger_path
from forge.llm.ledger_bucket import published_rows
from forge.storage import TableStore, location


def _spend(prefix: str, costs: list[float]) -> None:
    ledger = SpendLedger(ledger_path())  # this machine's: in its work dir
    for n, cost in enumerate(costs):
        ledger.append(
            {"request_id": f"{prefix}-{n}", "stage": "vimu_qa", "kind": "call", "status": "ok", "cost_usd": cost}
        )
    ledger.close()


def _machine(monkeypatch, tmp_path, name: str, url: str) -> TableStore:
    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / name))
    location.forget_remotes()
    return TableStore(url)


def test_two_machines_spends_appear_once_each_in_the_snapshot(s3_url, tmp_path, monkeypatch):
    monkeypatch.setenv(location.DATA_URL_ENV, s3_url)
    a = _machine(monkeypatch, tmp_path, "node-a", s3_url)
    _spend("a", [0.25, 0.5])
    assert ledger_path().is_relative_to(a.data_dir)
    assert snapshot_ledger(a, ledger_path()) == 2

    b = _machine(monkeypatch, tmp_path, "node-b", s3_url)
    _spend("b", [1.0])
    assert snapshot_ledger(b, ledger_path()) == 3  # a's rows, published by a, and b's own
    assert snapshot_ledger(b, ledger_path()) == 3  # published again: nothing new, nothing twice

    a = _machine(monkeypatch, tmp_path, "node-a", s3_url)
    _spend("a2", [2.0])  # a spends more after b's snapshot
    assert snapshot_ledger(a, ledger_path()) == 4
    snap = a.read("llm_ledger")
    assert sorted(snap["request_id"]) == ["a-0", "a-1", "a2-0", "b-0"]
    assert snap["cost_usd"].sum() == 3.75
    assert len(a.remote.listing("ledger/llm")) == 3  # one object per publish that had new rows

    # two processes of one machine that published the same rows in two objects: counted once
    rows = published_rows(a.remote)
    a.remote.put("ledger/llm/ov/overlap.json", json.dumps({"rows": rows[:2]}).encode())
    assert len(published_rows(a.remote)) == 6
    assert snapshot_ledger(a, ledger_path()) == 4 and a.read("llm_ledger")["cost_usd"].sum() == 3.75


def test_a_local_data_dir_snapshots_its_own_ledger(tmp_path, monkeypatch):
    monkeypatch.delenv(location.DATA_URL_ENV, raising=False)
    monkeypatch.setenv(location.DATA_DIR_ENV, str(tmp_path / "data"))
    store = TableStore(tmp_path / "data")
    _spend("l", [0.1, 0.2])
    assert ledger_path() == tmp_path / "data" / "cache" / "llm_ledger.sqlite"
    assert snapshot_ledger(store, ledger_path()) == 2
    assert not (tmp_path / "data" / "ledger").exists()
    assert sorted(store.read("llm_ledger")["request_id"]) == ["l-0", "l-1"]
