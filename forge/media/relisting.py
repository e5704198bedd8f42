"""A re-listing never loses what was listed before only because it cannot be listed *now*.

``sources`` lists every declared source again on each run (an inbox drop triggers one). A
source still declared but not listable this time (an unset ``${VARIABLE}``, a sources file that
no longer parses, a server that is down for some of its URLs) keeps its earlier rows in
``sources`` and ``source_items``, batch included, so the batches already built keep their
items; the reason is reported instead of a reject (a reject means the item is gone). A
source removed from every sources file is dropped, and an item that a working listing no
longer finds (a file deleted from a folder) is gone as before.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from forge.media.batch import Listing
from forge.storage.rejects import RejectLog

SOURCE, FILE = "source:", "sources_file:"


@dataclass
class Kept:
    """What was carried over from the earlier listing, per source: items and why."""

    items: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.items)

    def lines(self) -> list[str]:
        return [f"{s}: {n} earlier item(s) kept ({self.reasons.get(s, '')})" for s, n in sorted(self.items.items())]


def _failed_sources(log: RejectLog, earlier_sources: pd.DataFrame, listed: set[str]) -> dict[str, str]:
    """Sources declared now that could not be listed (by name, with the reject's reason), and
    earlier sources of a sources file that was rejected as a whole."""
    failed: dict[str, str] = {}
    bad_files: dict[str, str] = {}
    for row in log.rows:
        iid = row["item_id"]
        if iid.startswith(SOURCE) and iid[len(SOURCE) :] not in listed and row["reason"] != "duplicate_source":
            failed.setdefault(iid[len(SOURCE) :], row["reason"])
        elif iid.startswith(FILE):
            bad_files[iid[len(FILE) :]] = row["reason"]
    if bad_files and len(earlier_sources) and "sources_file" in earlier_sources:
        for r in earlier_sources.itertuples():
            name = str(r.sources_file).replace("\\", "/").rsplit("/", 1)[-1]
            if name in bad_files and r.source not in listed:
                failed.setdefault(r.source, f"{bad_files[name]} in {name}")
    return failed


def keep_earlier(
    listing: Listing, earlier_sources: pd.DataFrame, earlier_items: pd.DataFrame, log: RejectLog
) -> tuple[Listing, Kept]:
    """``listing`` plus the earlier rows of what cannot be listed now; their rejects are
    taken out of ``log`` (the items are kept, not dropped) and reported in ``Kept``."""
    kept = Kept()
    if not len(earlier_items) or "source" not in earlier_items:
        return listing, kept
    listed = {s.name for s in listing.specs}
    failed = _failed_sources(log, earlier_sources, listed)
    new_ids = set(listing.items["item_id"]) if len(listing.items) else set()
    rejected = {row["item_id"]: row["reason"] for row in log.rows}
    whole = earlier_items["source"].isin(list(failed))
    partial = (
        earlier_items["source"].isin(list(listed))
        & ~earlier_items["item_id"].isin(list(new_ids))
        & earlier_items["item_id"].isin(list(rejected))
    )
    carried = earlier_items[whole | partial]
    if not len(carried):
        return listing, kept
    for source, group in carried.groupby("source"):
        kept.items[str(source)] = len(group)
        why = failed.get(source) or ", ".join(sorted({rejected[i] for i in group["item_id"]}))
        kept.reasons[str(source)] = f"cannot be listed now: {why}"
    drop = set(carried["item_id"]) | {SOURCE + s for s in failed if s in kept.items}
    log.rows[:] = [r for r in log.rows if r["item_id"] not in drop]
    items = pd.concat([listing.items, carried], ignore_index=True) if len(listing.items) else carried
    sources = listing.sources
    if len(earlier_sources) and "source" in earlier_sources:
        old = earlier_sources[earlier_sources["source"].isin([s for s in failed if s in kept.items])]
        sources = pd.concat([sources, old], ignore_index=True) if len(sources) else old
    return Listing(sources.reset_index(drop=True), items.reset_index(drop=True), listing.specs), kept
