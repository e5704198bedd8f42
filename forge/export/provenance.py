"""Where each exported item comes from, and what building it cost.

``provenance``: item → source item, source, url, uploader, channel, licence, title and the
frames it shows (frame id, timestamp), from the trunk's ``source_items``, ``videos`` and
``frames`` tables. Values a source did not record stay null (the card says "unknown").

``benchmark_cost``: every ``llm_calls`` row of the recipe's stages (``<paper>_*``) and of
the blind-solvability gate (stage ``blind_solver``, partition = benchmark), including
failed, invalid and regenerated attempts, divided by the items that made it into the export.
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd


def _first(*vals: Any) -> Any:
    for v in vals:
        if v is not None and v is not pd.NA and not (isinstance(v, float) and v != v) and str(v).strip() != "":
            return v
    return None


def provenance(
    items: pd.DataFrame, source_items: pd.DataFrame | None, videos: pd.DataFrame | None, frames: pd.DataFrame | None
) -> pd.DataFrame:
    si = (
        source_items.drop_duplicates("item_id").set_index("item_id")
        if source_items is not None and len(source_items)
        else None
    )
    vi = videos.drop_duplicates("video_id").set_index("video_id") if videos is not None and len(videos) else None
    fr = frames.drop_duplicates("path").set_index("path") if frames is not None and len(frames) else None
    rows = []
    for r in items.to_dict("records"):
        sid = r.get("source_item_id")
        # an imported release item carries its licence and version itself (folded into extra by the gates)
        try:
            ex = json.loads(r["extra"]) if isinstance(r.get("extra"), str) else {}
        except ValueError:
            ex = {}
        s = si.loc[sid].to_dict() if si is not None and sid in si.index else {}
        v = vi.loc[sid].to_dict() if vi is not None and sid in vi.index else {}
        media = []
        for p in list(r.get("media_paths") or []):
            f = fr.loc[p].to_dict() if fr is not None and p in fr.index else {}
            media.append(
                {
                    "path": p,
                    "frame_id": f.get("frame_id"),
                    "kind": f.get("kind"),
                    "timestamp_s": _first(f.get("timestamp_s")),
                    "frame_item_id": f.get("item_id"),
                }
            )
        rows.append(
            {
                "item_id": r["item_id"],
                "split": r.get("split"),
                "source": _first(r.get("source"), s.get("source"), v.get("source")),
                "source_item_id": sid,
                "url": _first(v.get("url"), s.get("url")),
                "uploader": _first(v.get("uploader")),
                "channel": _first(r.get("channel"), v.get("channel"), v.get("uploader")),
                "license": _first(r.get("licence"), ex.get("licence"), v.get("license"), s.get("license")),
                "title": _first(
                    v.get("title"),
                    s.get("title"),
                    ex.get("release") and f"{ex.get('release')} {ex.get('release_version') or ''}".strip(),
                ),
                "upload_date": _first(v.get("upload_date")),
                "origin": _first(v.get("origin"), s.get("origin"), r.get("origin"), ex.get("origin")),
                "media": media,
            }
        )
    cols = [
        "item_id",
        "split",
        "source",
        "source_item_id",
        "url",
        "uploader",
        "channel",
        "license",
        "title",
        "upload_date",
        "origin",
        "media",
    ]
    return pd.DataFrame(rows, columns=cols)


def benchmark_cost(calls: pd.DataFrame | None, benchmark: str, n_items: int) -> dict[str, Any]:
    out = {
        "cost_usd": 0.0,
        "calls": 0,
        "cache_hits": 0,
        "tokens_in": 0,
        "tokens_out": 0,
        "per_item": 0.0,
        "stages": {},
        "unpriced": "",
    }
    if calls is None or calls.empty:
        return out
    mine = calls[
        calls["stage"].str.startswith(f"{benchmark}_")
        | ((calls["stage"] == "blind_solver") & (calls["partition"] == benchmark))
    ]
    if mine.empty:
        return out
    # Stub calls are never billed (older llm_calls rows may still carry a price).
    mine = mine.assign(cost_usd=mine["cost_usd"].where(mine["backend"] != "stub", 0.0))
    real = mine[~mine["cache_hit"].astype(bool)]
    out["billed_calls"] = int((real["backend"] != "stub").sum())
    out.update(
        cost_usd=float(mine["cost_usd"].sum()),
        calls=int(len(real)),
        cache_hits=int(mine["cache_hit"].astype(bool).sum()),
        tokens_in=int(real["tokens_in"].sum()),
        tokens_out=int(real["tokens_out"].sum()),
        stages={k: round(float(v), 6) for k, v in mine.groupby("stage")["cost_usd"].sum().items()},
    )
    out["per_item"] = out["cost_usd"] / n_items if n_items else 0.0
    free = real[(real["cost_usd"] == 0) & (real["backend"] != "stub") & (real["tokens_in"] > 0)]
    out["unpriced"] = ", ".join(sorted(free["model"].unique())) if len(free) else ""
    return out
