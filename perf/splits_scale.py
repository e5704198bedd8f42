"""Leakage grouping + stratified assignment + cross-split audit at scale (prints timings).

Synthetic items: N items over N/3 source items (30 % of them in N/300 channels), random 64-bit pHashes with
5 % near-duplicate re-uploads (a few bits flipped). Run: .venv/bin/python perf/splits_scale.py [N]
"""

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from forge.splits import assign as sa
from forge.splits import leakage as lk
from forge.splits.config import SplitSizes


def main(n: int = 100_000) -> None:
    rng = np.random.default_rng(0)
    # A channel owns its videos: 30 % of videos have a known channel (n/300 channels).
    n_vid = n // 3 + 1
    vid_channel = [f"ch{rng.integers(0, max(1, n // 300)):05d}" if rng.random() < 0.3 else None for _ in range(n_vid)]
    items = pd.DataFrame(
        {
            "item_id": [f"it{i:07d}" for i in range(n)],
            "source_item_id": [f"v{i // 3:07d}" for i in range(n)],
            "channel": [vid_channel[i // 3] for i in range(n)],
            "category": rng.choice(["irony", "metaphor", "humour", "sarcasm", "pun"], n, p=[0.4, 0.25, 0.15, 0.1, 0.1]),
        }
    )
    ph = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, n, dtype=np.int64)
    dup = rng.random(n) < 0.05
    src = rng.integers(0, n, dup.sum())
    ph[dup] = ph[src] ^ np.int64(0b101)  # 2 bits away
    keys = []
    for col in ("source_item_id", "channel"):
        keys += [(i, col, f"{col}:{v}") for i, v in zip(items["item_id"], items[col]) if isinstance(v, str)]
    links = lk.ItemLinks(
        pd.DataFrame(keys, columns=["item_id", "kind", "key"]),
        pd.DataFrame({"item_id": items["item_id"], "phash_int": ph}),
        phash_threshold=8,
    )
    t0 = time.perf_counter()
    groups = lk.leakage_groups(items["item_id"], links)
    t1 = time.perf_counter()
    assigned = sa.assign_splits(items, groups, SplitSizes.parse({"dev": 0.1, "validation": 0.1, "test": "rest"}), 0)
    t2 = time.perf_counter()
    rep = lk.cross_split_pairs(assigned, links)
    t3 = time.perf_counter()
    print(f"items={n:,} groups={groups.nunique():,} largest={groups.value_counts().max():,}")
    print(f"leakage groups  {t1 - t0:6.2f} s")
    print(f"assign splits   {t2 - t1:6.2f} s   strat. error {sa.stratification_error(assigned, items):.4f}")
    print(f"audit (check)   {t3 - t2:6.2f} s   cross-split pairs {rep.total}")
    print(assigned["split"].value_counts().to_dict())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000)
