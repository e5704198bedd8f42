"""Human gold from an imported release in place of LLM-made fields of built items (config switch).

``config/releases.yaml`` ``gold.<paper>: {enabled, fields}`` (off by default). A built item
(``origin`` not ``imported``) whose match key equals an imported item's takes the imported
value of each enabled field; ``extra.provenance`` then says, per field, where the value comes
from (``release:<name>@<version>`` or ``llm``), and ``extra.gold_release`` which release.

Each paper declares its match key and fields in its spec (``BenchmarkSpec.gold``, a
``GoldRules`` in ``assets/recipes/<paper>/logic/gold.py``); a paper without one has no gold step.
``config/releases.yaml`` ``gold.<paper>: {enabled: true}`` switches it on with the paper's
default fields; ``fields: [...]`` names others.

The gold step is explicit and versioned (#38): ``with_gold`` is the transform ``<paper>_splits``,
``_gated`` and ``_export`` apply where they read ``<paper>_items``, and ``gold_version(spec)``
(the enabled fields plus this module's rules; ``off`` when the switch is off) is part of each of
their code versions, so switching gold on, changing its fields or its rules marks them changed
instead of leaving them "up to date" on items they would now read differently.
"""

from __future__ import annotations

import inspect
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from forge.benchmarks.spec import BenchmarkSpec
from forge.items.cells import as_object
from forge.provenance.versioning import content_hash
from forge.releases.config import config_path

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
        k = rules.match_key(r)
        if k is not None:
            gold.setdefault(k, r)
            by_caption.setdefault(k[0], r)
    if not gold:
        return items, counts
    out = items.copy()
    for i in out.index[~imported]:
        row = out.loc[i].to_dict()
        k = rules.match_key(row)
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


def _doc(config: str | Path | None = None) -> dict[str, Any]:
    try:
        return yaml.safe_load(Path(config or config_path()).read_text()) or {}
    except OSError:
        return {}


def gold_version(spec: BenchmarkSpec, config: str | Path | None = None) -> str:
    """The version of ``spec``'s gold step: ``off``, or a hash of the enabled fields, of this
    module (how fields are replaced) and of the paper's rules module (what matches). Part of the code version of every asset that
    reads ``<paper>_items`` through ``with_gold`` (``<paper>_splits``, ``_gated``, ``_export``)."""
    fields = gold_policy(spec, _doc(config))
    if not fields:
        return "off"
    rules_file = Path(inspect.getsourcefile(spec.gold.match_key) or __file__)
    return content_hash(GOLD_VERSION, spec.name, sorted(fields), files=[Path(__file__), rules_file])


def with_gold(items: pd.DataFrame, spec: BenchmarkSpec, config: str | Path | None = None) -> pd.DataFrame:
    """``items`` after the gold switch of the releases config (unchanged when it is off)."""
    fields = gold_policy(spec, _doc(config))
    return apply_gold(spec, items, fields)[0] if fields else items
