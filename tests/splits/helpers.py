"""A small hand-made world for the splits tests: images, trunk tables and an items table."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image

from forge.media.hashing import hash_image
from forge.storage import TableStore
from forge.storage.contracts import load_contract

BATCH = "demo-0000"
# Required paper-specific columns of each items contract (values do not matter here).
PAPER_COLUMNS = {
    "vague": {"direct_expression": "pass the salt", "indirect_expression": "this soup is bland"},
    "vimu": {"question_id": "q", "extra": "{}"},
    "iibench": {"extra": "{}"},
    "hummus": {"extra": "{}"},
}


def noise_image(path: Path, seed: int, brighten: int = 0) -> None:
    """A random image (unrelated pHashes across seeds); ``brighten`` makes a near-duplicate."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)
    img = Image.fromarray(small).resize((64, 64), Image.NEAREST)
    if brighten:
        img = Image.fromarray(np.clip(np.asarray(img).astype(int) + brighten, 0, 255).astype(np.uint8))
    path.parent.mkdir(parents=True, exist_ok=True)
    img.save(path)


def write(store: TableStore, table: str, rows: list[dict], part: str = BATCH) -> None:
    c = load_contract(table)
    store.write(table, c.conform(pd.DataFrame(rows)), part, schema=c.arrow_schema())


def make_world(store: TableStore, specs: list[dict], benchmark: str = "maia", with_dedup: bool = True) -> pd.DataFrame:
    """``specs``: dicts with item_id, category, source_item_id, channel (opt), image seed (``img``),
    ``brighten`` (near-dup of that seed), question, options, answer, backend. Writes frames,
    frame_hashes, duplicates, videos, source_items and ``<benchmark>_items``."""
    frames, hashes, items, videos, sources = [], [], [], {}, {}
    for s in specs:
        fid = f"fr_{s['item_id']}"
        rel = f"media/images/{fid}.png"
        noise_image(store.data_dir / rel, s["img"], s.get("brighten", 0))
        h = hash_image(store.data_dir / rel)
        frames.append(
            {
                "frame_id": fid,
                "batch": BATCH,
                "source": "demo",
                "item_id": s["source_item_id"],
                "clip_id": None,
                "kind": "image",
                "frame_index": 0,
                "timestamp_s": None,
                "path": rel,
                "width": 64,
                "height": 64,
                "blur_var": 1.0,
                "caption": None,
                "sha256": fid,
            }
        )
        hashes.append(
            {
                "frame_id": fid,
                "batch": BATCH,
                "source": "demo",
                "item_id": s["source_item_id"],
                "clip_id": None,
                "kind": "image",
                "frame_index": 0,
                "width": 64,
                "height": 64,
                "phash": h.phash,
                "dhash": h.dhash,
                "phash_int": h.phash_int,
                "dhash_int": h.dhash_int,
            }
        )
        vid = s["source_item_id"]
        videos[vid] = {
            "video_id": vid,
            "batch": BATCH,
            "source": "demo",
            "origin": "url",
            "url": f"http://x/{vid}",
            "uploader": s.get("uploader"),
            "channel": s.get("video_channel"),
            "license": s.get("license"),
            "title": f"title {vid}",
            "duration_s": 1.0,
            "width": 64,
            "height": 64,
            "has_audio": False,
            "path": f"media/videos/{vid}.mp4",
            "bytes": 1,
            "sha256": vid,
            "fetched_at": pd.Timestamp("2025-01-01", tz="UTC"),
        }
        sources[vid] = {
            "item_id": vid,
            "source": "demo",
            "batch": BATCH,
            "position": len(sources),
            "kind": "video",
            "origin": "url",
            "url": f"http://x/{vid}",
            "license": s.get("license"),
            "listed_at": pd.Timestamp("2025-01-01", tz="UTC"),
        }
        opts = s.get("options", [f"right {s['item_id']}", "wrong one", "wrong two", "wrong three"])
        items.append(
            {
                "item_id": s["item_id"],
                "benchmark": benchmark,
                "task": s.get("task", "mcq"),
                "category": s["category"],
                "question": s.get("question", f"What does image {s['item_id']} imply?"),
                "options": opts,
                "option_types": s["option_types"]
                if "option_types" in s
                else ["correct"] + ["distractor"] * (len(opts) - 1),
                "answer": s.get("answer", "A"),
                "references": None,
                "media_paths": [rel],
                "unit_id": fid,
                "source_item_id": vid,
                "source": "demo",
                "channel": s.get("channel"),
                "batch": BATCH,
                "labels": json.dumps(
                    s.get("labels", {"domain": s["category"], "explanation": "because it shows a thing"})
                ),
                "backend": s.get("backend", "openai"),
                "model": "double-model",
                "prompt_hash": "ph1",
                "extra": None,
                **PAPER_COLUMNS.get(benchmark, {}),
                **s.get("columns", {}),
            }
        )
    write(store, "frames", frames)
    write(store, "frame_hashes", hashes)
    if with_dedup:
        from forge.media.dedup import find_duplicates

        h = pd.DataFrame(hashes)
        write(store, "duplicates", find_duplicates(h).to_dict("records"))
    write(store, "videos", list(videos.values()))
    write(store, "source_items", list(sources.values()))
    df = pd.DataFrame(items)
    table = f"{benchmark}_items"
    c = load_contract(table)
    store.write(table, c.conform(df), BATCH, schema=c.arrow_schema())
    return df
