"""The blind baseline's task-key secret on object storage: one per store, in the bucket, so two
machines (two work dirs, nothing shared but the bucket) compute the same blind keys and a push
from either finds the other's tasks; the secret reaches no log, table or work-dir file."""

from __future__ import annotations

import json
import logging

import pandas as pd

from forge.people import blind_room
from forge.people.blind_room import blind_key
from forge.storage import TableStore, location

SECRET_KEY = f"{blind_room.HOME}/{blind_room.KEYS}"


def _machine(monkeypatch, tmp_path, name: str, url: str) -> TableStore:
    """A fresh process state on another machine: its own work dir, the bucket only in common."""
    monkeypatch.setenv(location.WORK_DIR_ENV, str(tmp_path / name))
    location.forget_remotes()
    blind_room._SHARED.clear()
    return TableStore(url)


def test_two_machines_on_one_bucket_compute_the_same_blind_keys(s3_url, tmp_path, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    a = _machine(monkeypatch, tmp_path, "node-a", s3_url)
    ka = [blind_key(a.data_dir, "task", "vague", f"v{i}", "r1") for i in range(3)]
    a.write("items", pd.DataFrame({"item_id": ["x"]}))
    b = _machine(monkeypatch, tmp_path, "node-b", s3_url)
    assert b.data_dir != a.data_dir
    kb = [blind_key(b.data_dir, "task", "vague", f"v{i}", "r1") for i in range(3)]
    assert ka == kb and len(set(ka)) == 3
    secret = json.loads(b.remote.get(SECRET_KEY)[0])["secret"]
    # the secret is in the bucket only: no work-dir file, no table, no log line
    for store in (a, b):
        assert not (store.data_dir / SECRET_KEY).exists()
        for f in store.data_dir.rglob("*"):
            assert not f.is_file() or secret.encode() not in f.read_bytes(), f
    for name in b.remote.listing("tables"):
        assert secret.encode() not in b.remote.get(f"tables/{name}")[0]
    assert secret not in caplog.text and secret not in bytes.fromhex(secret).hex().upper()

    # a third machine on another bucket (another store) gets other keys
    other = s3_url.replace("/forge", "/other-prefix")
    c = _machine(monkeypatch, tmp_path, "node-c", other)
    assert blind_key(c.data_dir, "task", "vague", "v0", "r1") != ka[0]


def test_machines_racing_to_make_the_secret_agree_and_an_earlier_local_one_is_offered(s3_url, tmp_path, monkeypatch):
    # a machine that pushed blind tasks before the secret was shared: its work-dir file is offered
    a = _machine(monkeypatch, tmp_path, "node-a", s3_url)
    home = a.data_dir / blind_room.HOME
    home.mkdir(parents=True)
    (home / blind_room.KEYS).write_text(json.dumps({"secret": "ab" * 32}))
    before = blind_room.hmac.new(bytes.fromhex("ab" * 32), b"task\x1fb\x1fi\x1fr", "sha256").hexdigest()[:20]
    assert blind_key(a.data_dir, "task", "b", "i", "r") == before  # its tasks keep their keys

    # machines that all found no secret (they looked at once) race to write it: one object wins,
    # and every machine, the losers included, reads and uses that one
    fresh = s3_url.replace("/forge", "/fresh")
    keys: list[str] = []
    for i in range(3):
        s = _machine(monkeypatch, tmp_path, f"racer-{i}", fresh)
        real, looked = s.remote.get, []

        def get(rel, real=real, looked=looked):
            looked.append(rel)
            return None if len(looked) == 1 else real(rel)  # the first look: absent, as before the race

        monkeypatch.setattr(s.remote, "get", get)
        keys.append(blind_key(s.data_dir, "task", "b", "i", "r"))
        assert looked == [SECRET_KEY, SECRET_KEY]
    assert len(set(keys)) == 1 and keys[0] != before
    assert set(s.remote.listing("review")) == {"blind-studio/task_keys.json"}


def test_a_local_data_dir_keeps_its_own_secret_file(tmp_path, monkeypatch):
    monkeypatch.delenv(location.DATA_URL_ENV, raising=False)
    k = blind_key(tmp_path / "data", "task", "vague", "v1", "r1")
    f = tmp_path / "data" / SECRET_KEY
    assert f.is_file() and oct(f.stat().st_mode & 0o777) == "0o600"
    assert (
        k
        == blind_key(tmp_path / "data", "task", "vague", "v1", "r1")
        != blind_key(tmp_path / "d2", "task", "vague", "v1", "r1")
    )
