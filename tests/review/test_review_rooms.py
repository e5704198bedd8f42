"""Two rooms (docs/review.md, "Two rooms"; docs/security.md, "Label Studio's files"), on the real
Label Studio instances `make review` starts: the blind baseline's tasks live on an instance of
their own, where a participant cannot list or fetch any review project or its media (the review
instance does not know them); blind tasks share no id with review tasks and their media no bytes;
both instances' folders are 0700 and their files 0600; `/version` names no commit of the project;
a link placed in a served folder is refused, moved out and never served."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import subprocess
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import dagster as dg
import pytest
import requests
from PIL import Image

from assets.people.factory import people_defs
from forge.benchmarks.registry import get
from forge.export.stages import run_export
from forge.people.links import QUARANTINE
from forge.splits.config import stage_settings
from forge.storage import TableStore
from tests.review import scripted as sr
from tests.review.test_human_baselines import iibench_items
from tests.review.test_review_flow import _resources, q

pytestmark = pytest.mark.slow  # real Label Studio servers

ROOT = Path(__file__).resolve().parents[2]


def mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def test_both_instances_keep_their_files_private(ls_server, ls_blind):
    """Folders 0700, the database and every file holding a secret 0600, on both instances."""
    _data, _ls, review = ls_server
    _bls, blind = ls_blind
    assert review.home != blind.home and blind.home.parent == review.home
    for s in (review, blind):
        assert mode(s.home) == 0o700 and mode(s.home / "label-studio") == 0o700
        db = s.home / "label-studio" / "label_studio.sqlite3"
        assert db.is_file() and mode(db) == 0o600
        assert mode(s.home / "admin.json") == 0o600 and mode(s.home / "server.log") == 0o600
        for root, dirs, files in os.walk(s.home / "label-studio"):
            assert all(mode(Path(root) / d) == 0o700 for d in dirs), root
            assert all(mode(Path(root) / f) == 0o600 for f in files), root
        assert s.token in (s.home / "admin.json").read_text()  # the file that holds it is the private one


def _commits(text: str) -> list[str]:
    """Hex strings in ``text`` that name a commit of this project's repository."""
    out = []
    for h in set(re.findall(r"\b[0-9a-f]{7,40}\b", text)):
        r = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{h}^{{commit}}"],
            capture_output=True,
            check=False,
        )
        out += [h] if r.returncode == 0 else []
    return out


def test_version_page_names_no_commit_of_the_project(ls_server, ls_blind):
    if subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True).returncode:
        pytest.skip("not a git checkout: no project commit to look for")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    for url in (ls_server[2].url, ls_blind[1].url):
        for path in ("/api/version", "/version/"):
            r = requests.get(url + path, timeout=30)  # anyone, not logged in
            assert r.status_code == 200
            assert head not in r.text and head[:7] not in r.text
            assert _commits(r.text) == [], f"{path} names a commit of the project"
        assert requests.get(url + "/api/version", timeout=30).json()["release"]  # Label Studio's release stays


def _push_both(data: Path) -> None:
    """II-Bench's review tasks (gold shown) to the review instance and its blind baseline to the
    blind one, through the assets."""
    store = TableStore(data)
    iibench_items(store)
    spec = get("iibench")
    run_export(store, spec, stage_settings(spec), force_stub=False)
    assets = list(people_defs("iibench", "review").assets) + list(people_defs("iibench", "human").assets)
    for key in ("iibench_review_tasks", "iibench_human_tasks"):
        assert dg.materialize(assets, selection=[key], resources=_resources(data)).success


def _local(url: str) -> str:
    return parse_qs(urlparse(url).query)["d"][0]


def test_a_blind_participant_reaches_no_review_project_and_blind_media_have_other_bytes(review_env, ls_blind):
    data, ls, srv, configure = review_env
    bls, bsrv = ls_blind
    configure("defaults: {policy: advisory}\nbenchmarks:\n  iibench: {human_answers: 3}\n")
    _push_both(data)
    review_projects = ls.projects()
    (blind_project,) = bls.projects()
    assert "blind baseline" in blind_project["title"]
    assert not any("baseline" in p["title"] for p in review_projects) and review_projects
    review_tasks = [t for p in review_projects for t in ls.tasks(p["id"])]
    blind_tasks = bls.tasks(blind_project["id"])
    assert len(blind_tasks) == 4 and len(review_tasks) == 4

    # no shared ids: neither the item ids, revisions and review task ids, nor the unkeyed key
    rows = q(data, "select kind, item_id, revision, task_id from review_tasks")
    blind_text = json.dumps([[t["data"], t.get("meta")] for t in blind_tasks])  # what any member can read
    for r in rows[rows.kind == "review"].itertuples():
        assert r.item_id not in blind_text and r.revision not in blind_text
    keys = [t["data"]["item_id"] for t in blind_tasks]
    assert all(re.fullmatch(r"[0-9a-f]{20}", k) for k in keys) and len(set(keys)) == 4
    assert all(t["data"]["revision"] == t["data"]["item_id"] for t in blind_tasks)
    # created in the order of their keys, not the items': a task id says nothing about its item
    assert [t["data"]["item_id"] for t in sorted(blind_tasks, key=lambda t: t["id"])] == sorted(keys)

    # the participant, signed up by invite on the blind instance, answers there ...
    p = sr.reviewer(bls, "participant@blind.test")
    assert [x["id"] for x in p.client.projects()] == [blind_project["id"]]

    # the blind media: the same pictures, other bytes, names that say nothing
    item_of = dict(rows[rows.kind == "human"][["task_id", "item_id"]].itertuples(index=False))
    review_file = {t["data"]["item_id"]: data / _local(t["data"]["image"]) for t in review_tasks}
    for t in blind_tasks:
        rel = _local(t["data"]["image"])
        assert re.fullmatch(r"iibench/[0-9a-f]{20}\.png", rel), rel
        got = p.client.session.get(bsrv.url + "/data/local-files/", params={"d": rel}, timeout=30)
        assert got.status_code == 200
        original = review_file[item_of[t["id"]]].read_bytes()
        assert hashlib.sha256(got.content).digest() != hashlib.sha256(original).digest()
        assert got.content == (bsrv.document_root / rel).read_bytes()
        same = Image.open(io.BytesIO(got.content)).convert("RGB"), Image.open(io.BytesIO(original)).convert("RGB")
        assert same[0].tobytes() == same[1].tobytes()  # lossless: what people see is what the model sees
        assert not (bsrv.document_root / rel).is_symlink() and (bsrv.document_root / rel).stat().st_nlink == 1

    # ... and the review instance does not know them: no list, no project, no task, no media. (Cookies
    # are per host, not per port: the review instance's answers replace the blind session's cookie,
    # as in a browser, so these probes come last.)
    assert "participant@blind.test" not in ls.users().values()
    media = {_local(t["data"]["image"]) for t in review_tasks}
    assert media and all(m.startswith("media/") for m in media)
    for path in (
        "/api/projects",
        *(f"/api/projects/{x['id']}" for x in review_projects),
        *(f"/api/tasks/{t['id']}" for t in review_tasks),
        *(f"/api/projects/{x['id']}/tasks" for x in review_projects),
    ):
        r = p.client.session.get(srv.url + path, timeout=30, allow_redirects=False)
        assert r.status_code in (401, 403), (path, r.status_code)
    for m in media:
        r = p.client.session.get(srv.url + "/data/local-files/", params={"d": m}, timeout=30, allow_redirects=False)
        assert r.status_code in (302, 401, 403, 404) and not r.content.startswith(b"\x89PNG"), (m, r.status_code)
    # the review instance's browser pages send them to log in
    r = p.client.session.get(f"{srv.url}/projects/{review_projects[0]['id']}/data", timeout=30, allow_redirects=False)
    assert r.status_code == 302 and "login" in r.headers["Location"]


def test_a_link_in_a_served_folder_is_refused_and_never_served(review_env, ls_blind):
    data, ls, srv, configure = review_env
    bls, bsrv = ls_blind
    configure("defaults: {policy: advisory}\nbenchmarks:\n  iibench: {human_answers: 3}\n")
    _push_both(data)
    (blind_project,) = bls.projects()
    served = bsrv.document_root / "iibench"
    (served / "evil.png").symlink_to(bsrv.home / "admin.json")
    (served / "up").symlink_to("/etc", target_is_directory=True)
    os.link(bsrv.home / "admin.json", served / "copy.png")  # a hard link: the secret's own bytes

    # the next push refuses them before it names a file there, and says so
    res = dg.materialize(
        list(people_defs("iibench", "human").assets), selection=["iibench_human_tasks"], resources=_resources(data)
    )
    md = res.asset_materializations_for_node("iibench_human_tasks")[0].metadata
    refused = md["refused_links"].value
    assert len(refused) == 3 and any("symlink: a link to " in r for r in refused)
    assert any("hard_link_to_secret" in r for r in refused)
    assert not any(p.is_symlink() for p in served.iterdir()) and not (served / "copy.png").exists()
    report = [json.loads(x) for x in (data / QUARANTINE / "refused.jsonl").read_text().splitlines()]
    assert {r["path"] for r in report} >= {"review/blind/iibench/evil.png", "review/blind/iibench/up"}
    assert all((data / r["moved_to"]).is_symlink() or (data / r["moved_to"]).is_file() for r in report)
    assert (bsrv.home / "admin.json").is_file()  # the target is untouched

    # never served: nothing left at those names for anyone, the admin included
    for name in ("evil.png", "copy.png", "up/passwd"):
        r = bls.session.get(bsrv.url + "/data/local-files/", params={"d": f"iibench/{name}"}, timeout=30)
        assert r.status_code == 404 and bsrv.token.encode() not in r.content
