"""VAGUE's public release (2.0) as benchmark items (importer; docs/releases.md).

Records (a JSON list, a JSON object keyed by id, or JSON lines; the release ships
``vcr_1144_final.json`` and ``ego4d_533_final.json``): ``image_name`` (the frame; the official
inference reads ``<img_dir>/<image_name>_annot.jpg``, the image with the person tags drawn,
so that name is looked up first, then ``<image_name>.<ext>``, then the file ``meta.annot_link``
names), ``direct``, ``indirect``, ``solution``
(``(subject, action, object)``), ``mcq`` with ``1_correct``, ``2_fake_scene``,
``3_surface_understanding``, ``4_wrong_entity`` and ``ordering`` (the letter each of those
four options takes, in that numeric order), and ``meta`` (``caption``, ``ram_entity``,
``img_size``, ``person_bbox``, ``rating`` {direct, indirect}, ``fake_caption``,
``annot_link``); ``meta.reasoning`` where a file carries it (the in-context examples). The
subset (``vcr`` / ``ego4d``, the two columns of the paper's Table 1) comes from the file name and
goes to ``labels.subset``. The options keep the release's letters; option types map to the recipe's
``correct / FS / SU / NE``. The release has no sarcasm / humour / meme-idiom strategy per
item, so ``category`` is ``unspecified``; unknown ``mcq`` keys are kept in ``extra`` and
reported.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pandas as pd

from forge.provenance.versioning import content_hash
from forge.releases.config import ReleaseInfo
from forge.releases.records import (
    IMAGE_SUFFIXES,
    ParsedRelease,
    embedded_image,
    file_label,
    item_columns,
    media_path,
    open_release,
    plain,
    provenance,
    read_table,
    rows_of,
    table_files,
    text,
)

from .logic import QUESTION


@cache
def columns() -> tuple[str, ...]:
    """The columns of ``vague_items`` (its contract, read when a release is parsed, not at import)."""
    return tuple(item_columns("vague_items", Path(__file__).resolve().parents[1] / "contracts"))


OPTION_KEYS = {"correct": "correct", "fake_scene": "FS", "surface_understanding": "SU", "wrong_entity": "NE"}
UNSPECIFIED = "unspecified"
_KEY = re.compile(r"^(\d+)_(.+)$")
RECORD_KEYS = ("image_name", "direct", "indirect", "solution", "mcq", "meta")
MCQ_KEYS = ("1_correct", "2_fake_scene", "3_surface_understanding", "4_wrong_entity", "ordering")
META_KEYS = ("caption", "ram_entity", "img_size", "person_bbox", "annot_link", "rating", "fake_caption", "reasoning")
IGNORED_KEYS: frozenset[str] = frozenset()
# VAGUE §3.3: 1,677 images, 1,144 from VCR and 533 from Ego4D, one item each.
PAPER = {"items": 1677, "vcr": 1144, "ego4d": 533}


def _subset(name: str) -> str | None:
    low = name.lower()
    return next((s for s in ("vcr", "ego4d") if s in low), None)


def _image(images: dict[str, Any], name: str, meta: dict[str, Any]) -> Any:
    link = text(meta.get("annot_link")).rsplit("/", 1)[-1]
    keys = [f"{name}_annot.jpg", f"{name}_annot", name, f"{name}.jpg", link, link.rsplit(".", 1)[0]]
    return next((images[k.lower()] for k in keys if k and k.lower() in images), None)


def _options(mcq: dict[str, Any]) -> tuple[list[tuple[int, str, str]], list[str]]:
    """(rank, type, text) of the four options in the release's numeric order, and unknown keys."""
    opts, unknown = [], []
    for k, v in mcq.items():
        m = _KEY.match(str(k))
        if m and m.group(2) in OPTION_KEYS:
            opts.append((int(m.group(1)), OPTION_KEYS[m.group(2)], text(v)))
        elif k != "ordering":
            unknown.append(str(k))
    return sorted(opts), unknown


def _solution(s: str) -> dict[str, str]:
    parts = [p.strip() for p in s.strip().strip("()").split(",")]
    return dict(zip(("subject", "action", "object"), parts)) if len(parts) == 3 else {"solution": s}


def parse_release(info: ReleaseInfo) -> ParsedRelease:
    out = ParsedRelease(items=pd.DataFrame(columns=list(columns())))
    files = open_release(info, out)
    images = files.index(IMAGE_SUFFIXES)
    require_media = bool(info.option("require_media", True))
    rows, seen = [], set()
    subsets: Counter = Counter()
    for f in table_files(files):
        try:
            data = read_table(f)
        except Exception as e:  # noqa: BLE001 - an unreadable file is a reject, the others still load
            out.reject(file_label(files, f), "unreadable_file", f"{type(e).__name__}: {e}")
            continue
        for key, r in rows_of(data):
            where = f"{file_label(files, f)}[{key}]"
            out.records += 1
            r = plain(r)  # Parquet cells (numpy arrays) as lists
            if not isinstance(r, dict) or not isinstance(r.get("mcq"), dict):
                out.reject(where, "unparsable_record", "a record needs an mcq object")
                continue
            name, indirect = text(r.get("image_name")), text(r.get("indirect"))
            if not name or not indirect or not text(r.get("direct")):
                out.reject(where, "missing_field", "image_name, direct and indirect are required")
                continue
            opts, unknown = _options(r["mcq"])
            for k in unknown:
                out.keep_unknown("mcq_key", k)
            if sorted(t for _, t, _ in opts) != sorted(OPTION_KEYS.values()) or any(not t for _, _, t in opts):
                out.reject(
                    where,
                    "incomplete_options",
                    f"needs the four options {sorted(OPTION_KEYS)}, got {[t for _, t, _ in opts]}",
                )
                continue
            order = [text(x).upper() for x in r["mcq"].get("ordering") or []]
            if sorted(order) != ["A", "B", "C", "D"]:
                out.reject(where, "bad_ordering", f"ordering {r['mcq'].get('ordering')!r} is not a permutation of A-D")
                continue
            if len({t.casefold() for _, _, t in opts}) < 4:
                out.notes["duplicated_options"] += 1
            placed = sorted(zip(order, opts))
            options, types = [t for _, (_, _, t) in placed], [ty for _, (_, ty, _) in placed]
            meta = r.get("meta") if isinstance(r.get("meta"), dict) else {}
            src: Any = _image(images, name, meta)
            if src is None and (blob := embedded_image(r.get("image"))) is not None:
                src = blob  # an image column of a Parquet shard: its bytes are placed as the file
            if src is None and require_media:
                out.reject(where, "media_missing", f"image {name!r} ({name}_annot.jpg) not found under {info.path}")
                continue
            if isinstance(src, tuple):
                rel = media_path(info, Path(f"{name}_annot{src[1]}"))
                out.media[rel] = src[0]
            else:
                rel = media_path(info, src) if src is not None else None
                if rel:
                    out.media[rel] = src
            iid = "vague-rel-" + content_hash(info.name, name, indirect, length=16)
            if iid in seen:
                out.reject(where, "duplicate_record", f"{name!r} with the same utterance appears twice")
                continue
            seen.add(iid)
            subset = _subset(f.name)
            subsets[subset or "unknown"] += 1
            rating = meta.get("rating") if isinstance(meta.get("rating"), dict) else {}
            rows.append(
                {
                    "item_id": iid,
                    "benchmark": "vague",
                    "task": "mcq",
                    "category": UNSPECIFIED,
                    "question": f'{QUESTION}\nUtterance: "{indirect}"',
                    "options": options,
                    "option_types": types,
                    "answer": "ABCD"[types.index("correct")],
                    "references": [next(t for _, ty, t in opts if ty == "correct")],
                    "media_paths": [rel] if rel else [],
                    "unit_id": f"{info.name}:{name}",
                    "source_item_id": f"{info.name}:{name}",
                    "labels": json.dumps(
                        _solution(text(r.get("solution"))) | {"ram_entity": meta.get("ram_entity"), "subset": subset},
                        ensure_ascii=False,
                        default=str,
                    ),
                    "direct_expression": text(r.get("direct")),
                    "indirect_expression": indirect,
                    "extra": json.dumps(
                        {
                            "ratings": rating,
                            "caption": meta.get("caption"),
                            "fake_caption": meta.get("fake_caption"),
                            "person_bbox": meta.get("person_bbox"),
                            "img_size": meta.get("img_size"),
                            "image_name": name,
                            "annot_link": meta.get("annot_link"),
                            **({"reasoning": meta["reasoning"]} if meta.get("reasoning") else {}),
                            "origin": "imported",
                            **({"release_mcq": {k: r["mcq"][k] for k in unknown}} if unknown else {}),
                        },
                        ensure_ascii=False,
                        default=str,
                    ),
                    **provenance(info, text(r.get("split")) or None),
                }
            )
    out.items = pd.DataFrame(rows, columns=list(columns()))
    out.count("records", out.records, len(out.items))
    out.stats = {"items": (len(out.items), PAPER["items"])} | {
        f"items ({s})": (subsets.get(s, 0), PAPER[s]) for s in ("vcr", "ego4d")
    }
    return out
