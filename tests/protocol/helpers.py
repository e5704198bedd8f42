"""Running protocol step assets and reading their tables in the protocol tests."""

from __future__ import annotations

import json

import dagster as dg

from assets.people.factory import people_defs
from forge.storage import TableStore
from resources.llm import LLMResource
from resources.review import ReviewResource
from resources.storage import StorageResource


def materialize(data, benchmark: str, keys: list[str], llm: LLMResource | None = None) -> dg.ExecuteInProcessResult:
    """``llm``: the engine a step's control judge uses (MAIA's answers); the offline stub by default."""
    llm = llm or LLMResource(backend="stub", cache_path=str(data / "cache" / "llm_cache.sqlite"))
    res = {"storage": StorageResource(data_dir=str(data)), "review": ReviewResource(), "llm": llm}
    return dg.materialize(list(people_defs(benchmark, "step").assets), selection=keys, resources=res)


def results(data, part: str) -> dict[str, dict]:
    df = TableStore(data).read("protocol_results", parts=[part])
    return {r["unit_id"]: {**r, "values": json.loads(r["values"])} for r in df.to_dict("records")}


def tasks(ls, title_part: str) -> dict[str, dict]:
    """unit id → task of the project whose title contains ``title_part``."""
    second = "second pass" in title_part  # a step's second-pass project shares its title's start
    (p,) = [p for p in ls.projects() if title_part in p["title"] and ("second pass" in p["title"]) == second]
    return {t["data"]["unit_id"]: t for t in ls.tasks(p["id"])}


def choice(name: str, value: str, to: str = "image") -> dict:
    return {"from_name": name, "to_name": to, "type": "choices", "value": {"choices": [value]}}


def rating(name: str, value: int, to: str) -> dict:
    return {"from_name": name, "to_name": to, "type": "rating", "value": {"rating": value}}
