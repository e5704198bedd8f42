"""Human gold from an imported release in place of LLM-made fields of built items (config switch).

``config/releases.yaml`` ``gold.<paper>: {enabled, fields}`` (off by default). A built item
(``origin`` not ``imported``) whose match key equals an imported item's takes the imported
value of each enabled field; ``extra.provenance`` then says, per field, where the value comes
from (``release:<name>@<version>`` or ``llm``), and ``extra.gold_release`` which release.

Each paper declares its fields in its spec (``BenchmarkSpec.gold``, a ``GoldRules`` in
``assets/recipes/<paper>/logic/gold.py``) and its match key as ``hooks.gold_key``; a paper
without gold rules has no gold step.
``config/releases.yaml`` ``gold.<paper>: {enabled: true}`` switches it on with the paper's
default fields; ``fields: [...]`` names others.

The gold step is explicit and versioned (#38): ``gold_items`` reads ``<paper>_items`` and applies
gold once per content of the table and of the switch (the releases config read once per version
of the file), and ``<paper>_splits``, its leakage check and ``_gated`` read the items through it
(``_export`` reads the gated items); ``gold_version(spec)``
(the enabled fields plus this module's rules; ``off`` when the switch is off) is part of each of
their code versions, so switching gold on, changing its fields or its rules marks them changed
instead of leaving them "up to date" on items they would now read differently.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.spec import BenchmarkSpec
from forge.items.cells import as_object
from forge.items.read import read_items
from forge.provenance.versioning import content_hash
from forge.releases.config import config_path
from forge.storage import TableStore
from forge.storage.yaml_files import read_yaml

ANSWER_COLUMNS = ("answer", "references", "options", "option_types")


def apply_gold(spec: BenchmarkSpec, items: pd.DataFrame, fields: Iterable[str]) -> tuple[pd.DataFrame, Counter]:
    """``items`` with the enabled gold fields taken from imported rows; counts per field replaced."""
    rules = spec.gold
    fields = [f for f in fields if rules is not None and f in rules.fields]
    counts: Counter = Counter()
    if rules is None or items.empty or not fields or "origin" not in items:
        return items, counts
    imported = items["origin"].eq("imported")
    gold: dict[tuple[str, str], dict[str, Any]] = {}
    by_caption: dict[str, dict[str, Any]] = {}
    for r in items[imported].to_dict("records"):
        k = spec.hooks.gold_key(r)
        if k is not None:
            gold.setdefault(k, r)
            by_caption.setdefault(k[0], r)
    if not gold:
        return items, counts
    out = items.copy()
    for i in out.index[~imported]:
        row = out.loc[i].to_dict()
        k = spec.hooks.gold_key(row)
        if k is None:
            continue
        g = gold.get(k)
        any_g = g or by_caption.get(k[0])
        if any_g is None:
            continue
        extra = as_object(row.get("extra"))
        prov = dict(extra.get("provenance") or {})
        source = f"release:{any_g.get('release')}@{any_g.get('release_version')}"
        for f in fields:
            if f in rules.extra_keys:  # from any imported row of the same text key, whatever its task
                found = {key: v for key in rules.extra_keys[f] if (v := as_object(any_g.get("extra")).get(key))}
                if found:
                    extra.update(found)
                    prov[f], counts[f] = source, counts[f] + 1
                continue
            if g is None or str(row["task"]) not in rules.fields[f]:
                prov.setdefault(f, "llm")
                continue
            for c in ANSWER_COLUMNS:
                out.at[i, c] = g.get(c)
            if f in rules.labels_keys:
                labels, gold_labels = as_object(row.get("labels")), as_object(g.get("labels"))
                labels.update({key: gold_labels.get(key, []) for key in rules.labels_keys[f]})
                out.at[i, "labels"] = json.dumps(labels, ensure_ascii=False)
            prov[f], counts[f] = source, counts[f] + 1
        extra["provenance"], extra["gold_release"] = prov, any_g.get("release")
        out.at[i, "extra"] = json.dumps(extra, ensure_ascii=False, default=str)
    return out, counts


def gold_policy(spec: BenchmarkSpec, doc: dict[str, Any] | None) -> list[str]:
    """The enabled gold fields of ``spec`` in a releases config document ([] when off or when the
    paper has no gold rules); ``enabled: true`` without ``fields`` takes the paper's defaults."""
    entry = ((doc or {}).get("gold") or {}).get(spec.name) or {}
    rules = spec.gold
    if not entry.get("enabled") or rules is None:
        return []
    return list(entry.get("fields") or rules.default_fields)


GOLD_VERSION = "1"  # bump when the matching or replacing rules change in a way the file hash would miss


def releases_doc(config: str | Path | None = None) -> dict[str, Any]:
    """The releases config (``config/releases.yaml`` or ``SUBTEXT_RELEASES_CONFIG``), read once per
    version of the file (its size and modification time); a missing file is {}."""
    path = Path(config or config_path())
    try:
        st = path.stat()
    except OSError:
        return {}
    return _read_doc(str(path), st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=8)
def _read_doc(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    try:
        return read_yaml(path) or {}
    except OSError:
        return {}


def gold_version(spec: BenchmarkSpec, config: str | Path | None = None) -> str:
    """The version of ``spec``'s gold step: ``off``, or a hash of the enabled fields, of this
    module (how fields are replaced) and of the paper's rules module (what matches). Part of the code
    version of every asset that reads ``<paper>_items`` through the gold step (``gold_items``:
    ``<paper>_splits``, ``_gated``, ``_export``)."""
    fields = gold_policy(spec, releases_doc(config))
    if not fields:
        return "off"
    rules_file = Path(inspect.getsourcefile(spec.hooks.gold_key) or __file__)  # the paper's logic/gold.py
    return content_hash(GOLD_VERSION, spec.name, sorted(fields), files=[Path(__file__), rules_file])


def with_gold(items: pd.DataFrame, spec: BenchmarkSpec, config: str | Path | None = None) -> pd.DataFrame:
    """``items`` after the gold switch of the releases config (unchanged when it is off)."""
    fields = gold_policy(spec, releases_doc(config))
    return apply_gold(spec, items, fields)[0] if fields else items


# The gold step's results by content: (benchmark, enabled fields, the items table's live files, by
# path or URL: they name the data dir too); a few entries, since a build moves through the
# benchmarks one after another.
_STEP: OrderedDict[tuple[Any, ...], pd.DataFrame] = OrderedDict()
_STEP_SIZE = 4
_STEP_LOCK = threading.Lock()


def _items_signature(store: TableStore, table: str) -> tuple[Any, ...]:
    """The live files of ``table`` (a publish writes new ones), with size and time where local."""
    if not store.exists(table):
        return ()
    out: list[Any] = []
    for f in store.files(table):
        st = f.stat() if isinstance(f, Path) else None
        out.append((str(f), st.st_size, st.st_mtime_ns) if st else str(f))
    return tuple(out)


def gold_items(store: TableStore, spec: BenchmarkSpec, config: str | Path | None = None) -> pd.DataFrame:
    """The gold step: ``spec``'s items table as the recipe wrote it, with the releases config's gold
    applied (unchanged when it is off), made once per content of the table and of the switch and
    shared by every stage that reads it (``<paper>_splits``, its leakage check, ``_gated``; in one
    ``cli.build`` process, once per build). Each caller gets its own copy."""
    fields = gold_policy(spec, releases_doc(config))
    key = (spec.name, tuple(sorted(fields)), _items_signature(store, spec.items_table))
    with _STEP_LOCK:
        made = _STEP.get(key)
        if made is None:
            items = read_items(store, spec)
            made = apply_gold(spec, items, fields)[0] if fields else items
            _STEP[key] = made
            while len(_STEP) > _STEP_SIZE:
                _STEP.popitem(last=False)
        else:
            _STEP.move_to_end(key)
    return made.copy()
