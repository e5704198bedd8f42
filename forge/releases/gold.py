"""Human gold from an imported release in place of LLM-made fields of built items (config switch).

``config/releases.yaml`` ``gold.<paper>: {enabled, fields}`` (off by default). A built item
(``origin`` not ``imported``) whose match key equals an imported item's takes the imported
value of each enabled field; ``extra.provenance`` then says, per field, where the value comes
from (``release:<name>@<version>`` or ``llm``), and ``extra.gold_release`` which release.

Match keys and fields:

* **hummus** — the caption (normalised: case, spaces, final punctuation) and the task:
  ``verdict`` (classification), ``metaphors`` (naming), ``boxes`` (image_box, image_label and
  ``labels.boxes``), ``spans`` (caption_highlight), ``explanations`` (explanation),
  ``descriptions`` (``extra.image_description`` of every task; the §6.3 setting reads it);
* **maia** — the question text (normalised) and the task: ``pools`` (open_ended answer and
  references: the human 8-answer pool); ``statements`` (a statement-verification item takes
  the released true / false pair at the same pool position: the recipe counts from 0, the
  release from 1);
* **vimu** — the question text and the category: ``annotations`` (answer, references, options
  and option types of OE / EG / RM / SV).

The gold step is explicit and versioned (#38): ``with_gold`` is the transform ``<paper>_splits``,
``_gated`` and ``_export`` apply where they read ``<paper>_items``, and ``gold_version(paper)``
(the enabled fields plus this module's rules; ``off`` when the switch is off) is part of each of
their code versions, so switching gold on, changing its fields or its rules marks them changed
instead of leaving them "up to date" on items they would now read differently.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from forge.checks.text import canonical
from forge.releases.config import config_path
from forge.versioning import content_hash

FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "hummus": {
        "verdict": ("classification",),
        "metaphors": ("naming",),
        "boxes": ("image_box", "image_label"),
        "spans": ("caption_highlight",),
        "explanations": ("explanation",),
        "descriptions": (),
    },
    "maia": {"pools": ("open_ended",), "statements": ("statement_verification",)},
    "vimu": {"annotations": ("open_ended", "multi_select")},
}
ANSWER_COLUMNS = ("answer", "references", "options", "option_types")


def _json(v: Any) -> dict[str, Any]:
    try:
        return json.loads(v) if isinstance(v, str) and v else {}
    except ValueError:
        return {}


def match_key(paper: str, row: dict[str, Any]) -> tuple[str, str] | None:
    if paper == "hummus":
        cap = _json(row.get("extra")).get("caption")
        return (canonical(cap), str(row["task"])) if cap else None
    if paper == "maia":
        if row.get("task") == "open_ended":
            return canonical(str(row.get("question") or "")), "open_ended"
        if row.get("task") == "statement_verification":
            q, pos = _json(row.get("extra")).get("maia_question"), _json(row.get("labels")).get("pool_index")
            if not q or pos is None:
                return None
            pos = int(pos) + (0 if row.get("origin") == "imported" else 1)
            return canonical(str(q)), f"statement_verification:{pos}"
        return None
    if paper == "vimu":
        return canonical(str(row.get("question") or "")), str(row.get("category"))
    return None


def apply_gold(paper: str, items: pd.DataFrame, fields: Iterable[str]) -> tuple[pd.DataFrame, Counter]:
    """``items`` with the enabled gold fields taken from imported rows; counts per field replaced."""
    fields = [f for f in fields if f in FIELDS.get(paper, {})]
    counts: Counter = Counter()
    if items.empty or not fields or "origin" not in items:
        return items, counts
    imported = items["origin"].eq("imported")
    gold: dict[tuple[str, str], dict[str, Any]] = {}
    by_caption: dict[str, dict[str, Any]] = {}
    for r in items[imported].to_dict("records"):
        k = match_key(paper, r)
        if k is not None:
            gold.setdefault(k, r)
            by_caption.setdefault(k[0], r)
    if not gold:
        return items, counts
    out = items.copy()
    for i in out.index[~imported]:
        row = out.loc[i].to_dict()
        k = match_key(paper, row)
        if k is None:
            continue
        g = gold.get(k)
        any_g = g or by_caption.get(k[0])
        if any_g is None:
            continue
        extra = _json(row.get("extra"))
        prov = dict(extra.get("provenance") or {})
        source = f"release:{any_g.get('release')}@{any_g.get('release_version')}"
        for f in fields:
            tasks = FIELDS[paper][f]
            if f == "descriptions":
                desc = _json(any_g.get("extra")).get("image_description")
                if desc:
                    extra["image_description"] = desc
                    prov[f], counts[f] = source, counts[f] + 1
                continue
            if g is None or str(row["task"]) not in tasks:
                prov.setdefault(f, "llm")
                continue
            for c in ANSWER_COLUMNS:
                out.at[i, c] = g.get(c)
            if f == "boxes" and paper == "hummus":
                labels = _json(row.get("labels"))
                labels["boxes"] = _json(g.get("labels")).get("boxes", [])
                out.at[i, "labels"] = json.dumps(labels, ensure_ascii=False)
            prov[f], counts[f] = source, counts[f] + 1
        extra["provenance"], extra["gold_release"] = prov, any_g.get("release")
        out.at[i, "extra"] = json.dumps(extra, ensure_ascii=False, default=str)
    return out, counts


def gold_policy(paper: str, doc: dict[str, Any] | None) -> list[str]:
    """The enabled gold fields of ``paper`` in a releases config document ([] when off)."""
    spec = ((doc or {}).get("gold") or {}).get(paper) or {}
    return list(spec.get("fields") or []) if spec.get("enabled") else []


GOLD_VERSION = "1"  # bump when the matching or replacing rules change in a way the file hash would miss


def _doc(config: str | Path | None = None) -> dict[str, Any]:
    try:
        return yaml.safe_load(Path(config or config_path()).read_text()) or {}
    except OSError:
        return {}


def gold_version(paper: str, config: str | Path | None = None) -> str:
    """The version of ``paper``'s gold step: ``off``, or a hash of the enabled fields and of this
    module (its matching and replacing rules). Part of the code version of every asset that
    reads ``<paper>_items`` through ``with_gold`` (``<paper>_splits``, ``_gated``, ``_export``)."""
    fields = gold_policy(paper, _doc(config))
    return content_hash(GOLD_VERSION, paper, sorted(fields), files=[Path(__file__)]) if fields else "off"


def with_gold(items: pd.DataFrame, paper: str, config: str | Path | None = None) -> pd.DataFrame:
    """``items`` after the gold switch of the releases config (unchanged when it is off)."""
    fields = gold_policy(paper, _doc(config))
    return apply_gold(paper, items, fields)[0] if fields else items
