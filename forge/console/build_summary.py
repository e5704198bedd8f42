"""The table ``cli.build`` prints at the end: what the build made, read back from the catalog.

Items per benchmark and stage (rows of each recipe table, the items, the gated items and the
latest export), the most common reject reasons, every benchmark's latest export with its
version, the caveats that make the numbers not what a user might think (random detector
weights, the stub LLM backend, missing OCR weights), and commands that work on this machine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from forge.benchmarks.spec import BenchmarkSpec
from forge.export.card import is_human_reviewed
from forge.models.weights import WeightsMismatch, easyocr_model_dir
from forge.storage import TableStore, open_catalog, quote_ident, quote_literal
from forge.storage.paths import resolve_stored

TOP_REJECTS = 8


@dataclass
class BuildSummary:
    data_dir: Path
    stages: dict[str, list[tuple[str, int | None]]] = field(default_factory=dict)  # benchmark → (table, rows)
    rejects_total: int = 0
    top_rejects: list[tuple[str, str, int]] = field(default_factory=list)  # stage, reason, n
    exports: list[dict] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    llm: dict[str, float] = field(default_factory=dict)  # requests, cache_hits, cost_usd (the spend ledger)

    def lines(self) -> list[str]:
        out = ["", "Summary"]
        if not self.stages and not self.exports:
            out.append("  nothing built yet (no catalog): run `make demo`")
        if self.stages:
            out.append("  items per benchmark and stage (rows; - = table not built):")
            width = max(len(b) for b in self.stages)
            for bench, rows in self.stages.items():
                chain = " → ".join(f"{_short(t, bench)} {'-' if n is None else n}" for t, n in rows)
                out.append(f"    {bench:<{width}}  {chain}")
        out.append(f"  rejects: {self.rejects_total}" + (" (top reasons)" if self.top_rejects else ""))
        if self.top_rejects:
            w = max(len(f"{s}: {r}") for s, r, _ in self.top_rejects)
            out += [f"    {f'{s}: {r}':<{w}}  {n}" for s, r, n in self.top_rejects]
        if self.llm:
            out.append(
                f"  LLM: {int(self.llm['requests'])} requests, {int(self.llm['cache_hits'])} cache hits, "
                f"${self.llm['cost_usd']:.4f}" + (" (stub: nothing billed)" if not self.llm["cost_usd"] else "")
            )
        out.append("  exports:" + ("" if self.exports else " none"))
        for e in self.exports:
            splits = ", ".join(f"{k} {v}" for k, v in e["splits"].items())
            stub = f", {e['stub_items']} stub items" if e["stub_items"] else ""
            said = "human-reviewed" if e.get("reviewed") else "NOT human-reviewed"  # never taken for a reviewed one
            out.append(
                f"    {e['benchmark']} {e['version']}: {e['n_items']} items ({splits}){stub}, {said}  {e['path']}"
            )
        if self.caveats:
            out.append("  caveats:")
            out += [f"    ! {c}" for c in self.caveats]
        out += ["", "Next", *[f"  {c}" for c in next_commands(self.data_dir, self.exports)]]
        return out


def _reviewed(path: str | None, data_dir: Path) -> bool:
    """The export's own card says it is human-reviewed (its first lines; forge/export/card.py)."""
    card = resolve_stored(path, data_dir) / "README.md" if path else None
    return card is not None and card.is_file() and is_human_reviewed(card.read_text())


def _short(table: str, bench: str) -> str:
    return table.removeprefix(f"{bench}_")


def next_commands(data_dir: Path, exports: Sequence[dict] = ()) -> list[str]:
    """Commands that work here as printed (no DuckDB CLI, no placeholders to fill in)."""
    out = [
        "make ui                                  # the Dagster UI on http://127.0.0.1:3000",
        "make query Q=tables                      # every table and view, with row counts",
        'make query Q="select stage, reason, count(*) n from rejects group by all order by n desc"',
        "make review                              # human review in Label Studio (docs/review.md): exports say not human-reviewed until then",
    ]
    if exports:  # a real export folder: its dataset card (README.md), items and media
        out.append(f"ls {exports[0]['path']}   # an exported dataset: card (README.md), items, media")
    else:
        out.append(f"ls {data_dir}   # the data dir: tables, media, exports once a build exported")
    return out


def summarize(
    store: TableStore,
    specs: Sequence[BenchmarkSpec],
    caveats: Sequence[str] = (),
    top: int = TOP_REJECTS,
) -> BuildSummary:
    """Read the build's outcome through the catalog (``open_catalog``); ``caveats`` are the
    environment's (weights), the stub backend is found in the spend ledger and the exports."""
    out = BuildSummary(data_dir=store.data_dir, caveats=list(caveats))
    if not store.catalog_path.exists():
        return out
    con = open_catalog(store)
    try:
        for spec in specs:
            tables = [*dict.fromkeys([*spec.recipe_assets, spec.items_table])]
            rows = [(t, _count(con, t)) for t in tables]
            rows.append(("gated", _count(con, "gated_items", f"benchmark = {quote_literal(spec.name)}")))
            out.stages[spec.name] = rows
        out.rejects_total = _count(con, "rejects") or 0
        out.top_rejects = _rows(
            con,
            "select stage, reason, count(*) as n from rejects group by all order by n desc, stage, reason "
            f"limit {int(top)}",
        )
        for bench, version, n, splits, path, stub in _rows(
            con,
            "select benchmark, version, n_items, splits, path, stub_items from exports "
            "qualify row_number() over (partition by benchmark order by version_number desc) = 1 order by benchmark",
        ):
            out.exports.append(
                {
                    "benchmark": bench,
                    "version": version,
                    "n_items": n,
                    "splits": json.loads(splits) if splits else {},
                    "path": str(resolve_stored(path, store.data_dir)) if path else path,  # this data dir's own
                    "stub_items": stub or 0,
                    "reviewed": _reviewed(path, store.data_dir),
                }
            )
        stub_requests = _count(con, "llm_ledger", "backend = 'stub' and kind <> 'cache_hit'") or 0
        for requests, hits, usd in _rows(
            con,
            "select count(*) filter (where kind <> 'cache_hit'), count(*) filter (where kind = 'cache_hit'), "
            "coalesce(sum(cost_usd), 0) from llm_ledger",
        ):
            if requests or hits:
                out.llm = {"requests": requests, "cache_hits": hits, "cost_usd": float(usd)}
    finally:
        con.close()
    stub_items = sum(e["stub_items"] for e in out.exports)
    if stub_requests or stub_items:
        out.caveats.append(
            f"LLM stages ran on the offline stub backend ({stub_requests} requests, {stub_items} exported "
            "stub items): texts are placeholders, not benchmark items; set OPENAI_BASE_URL / OPENAI_API_KEY "
            "(docs/llm.md)"
        )
    return out


def weights_caveats(detector_weights: str, detector_random: bool, ocr_engine: str = "auto") -> list[str]:
    """Caveats about the models this machine uses: a detector built from an architecture file
    (random weights), EasyOCR weights that are missing or not the pinned ones, and the opt-in
    int8 text detector (ratios close to, not equal to, the library's)."""
    out = []
    if ocr_engine == "onnx-int8":
        out.append(
            "text ratios come from the int8 text detector (SUBTEXT_OCR_DETECTOR_ENGINE=onnx-int8): within "
            "0.01 of EasyOCR's own, not equal; unset it for the exact detector (docs/filters.md)"
        )
    if detector_random:
        out.append(
            f"the YOLO detector has RANDOM weights ({Path(detector_weights).name}): detections, tags and "
            "person counts are meaningless; set SUBTEXT_YOLO_WEIGHTS to a real yolo11n.pt (docs/vision.md)"
        )
    try:
        easyocr_model_dir(verify=True)
    except WeightsMismatch as exc:
        out.append(f"OCR weights unusable, text_ratio cannot run: {exc}")
    return out


def _count(con: duckdb.DuckDBPyConnection, table: str, where: str = "") -> int | None:
    """Rows of a catalog view (None when the view is missing or unreadable)."""
    try:
        row = con.execute(
            f"select count(*) from {quote_ident(table)}" + (f" where {where}" if where else "")
        ).fetchone()
    except duckdb.Error:
        return None
    return int(row[0]) if row else None


def _rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[tuple]:
    try:
        return [tuple(r) for r in con.execute(sql).fetchall()]
    except duckdb.Error:
        return []
