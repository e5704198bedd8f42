"""Immutable, versioned exports a researcher can load with ``datasets.load_dataset(path)``.

Layout of ``<exports_dir>/<benchmark>/v<N>/``::

    README.md                     dataset card; YAML header with `configs` for datasets / the Hub
    data/<split>/metadata.jsonl   one row per item; `file_names` → images (imagefolder, decoded)
    data/<split>/media/*          the item images, copied
    parquet/<split>.parquet       the same rows as a plain table (`file_names` relative to the root)
    provenance.jsonl              item → source item, url, uploader, channel, licence, frames
    plots/*.png                   category distribution, answer positions
    manifest.json                 content hash, item hashes (for diffs), file sha256s, config

Versioning: the content hash covers the exported rows, the media bytes and the stage
configuration. A build whose hash equals the latest version's writes nothing; otherwise it
writes ``v<N+1>`` into a temporary folder and renames it into place (never over an existing
folder), then makes its files read-only. The card states what changed since the previous
version.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from forge.benchmarks.spec import BenchmarkSpec
from forge.export.card import draw_plots, license_summary, render_card
from forge.export.hub import draw_gallery, hub_features, languages, size_category, task_categories
from forge.export.lmms import FOLDER as LMMS_FOLDER
from forge.export.lmms import LmmsTasks, card_section, write_task_folder
from forge.items.cells import as_object
from forge.items.manifest import MANIFEST, existing_versions, read_manifest
from forge.items.outcome import md_table
from forge.items.typed import conform, typed_struct
from forge.provenance.versioning import content_hash, sha256_file, stable_json
from forge.storage.paths import stored_path

# Exported item fields (never null: a column must have one type in every split's metadata file).
ROW_FIELDS = [
    "item_id",
    "benchmark",
    "split",
    "task",
    "category",
    "question",
    "options",
    "option_types",
    "answer",
    "references",
    "file_names",
    "media_paths",
    "unit_id",
    "source_item_id",
    "source",
    "channel",
    "group_id",
    "labels",
    "extra",
    "backend",
    "model",
    "prompt_hash",
]
_LIST_FIELDS = {"options", "option_types", "references", "file_names", "media_paths"}
GALLERY = "examples.png"  # plots/: the card's picture of example items
METADATA_FILE = "metadata.parquet"  # the imagefolder metadata `datasets` loads (card: metadata_filenames)
OBJECT_FIELDS = {"labels", "extra"}  # JSON objects → one struct type per export (Hub: typed features)
# The text-only probe's figures per item (forge/gates/blind.py), typed so a user can filter on
# them; never null: 0 trials = not probed (no options, or the probe off).
BLIND_FIELDS = {"blind_trials": pa.int64(), "blind_correct": pa.int64(), "blind_flagged": pa.bool_()}


class ExportExists(RuntimeError):
    """A version folder is already there: exports are never overwritten."""


def _clean(v: Any) -> Any:
    if v is None or v is pd.NA or (isinstance(v, float) and v != v):
        return None
    if hasattr(v, "tolist") and not isinstance(v, str):
        return v.tolist()
    return v


def media_name(rel: str) -> str:
    """File name of a media file inside an export: short hash of its data path + basename."""
    base = Path(rel).name
    return f"{content_hash(rel, length=10)}_{base}"


def export_rows(items: pd.DataFrame) -> list[dict[str, Any]]:
    """Items (gated_items columns) → export rows, sorted by split then id; lists never null."""
    rows = []
    for r in items.to_dict("records"):
        r = {k: _clean(v) for k, v in r.items()}
        media = [str(p) for p in (r.get("media_paths") or [])]
        row = {f: r.get(f) for f in ROW_FIELDS}
        row["media_paths"] = media
        row["file_names"] = [f"media/{media_name(p)}" for p in media]
        for f in ROW_FIELDS:
            if f in _LIST_FIELDS:
                row[f] = [str(x) for x in (row[f] or [])]
            elif f in OBJECT_FIELDS:
                row[f] = as_object(row[f])  # typed per export by ``type_objects``
            elif row[f] is None:
                row[f] = ""
            elif not isinstance(row[f], str):
                row[f] = (
                    json.dumps(row[f], ensure_ascii=False, default=str)
                    if isinstance(row[f], (dict, list))
                    else str(row[f])
                )
        row["blind_trials"] = int(r.get("blind_trials") or 0)
        row["blind_correct"] = int(r.get("blind_correct") or 0)
        row["blind_flagged"] = bool(r.get("blind_flagged") or False)
        rows.append(row)
    return sorted(rows, key=lambda x: (x["split"], x["item_id"]))


def type_objects(rows: list[dict[str, Any]]) -> tuple[pa.Schema, dict[str, list[str]]]:
    """Give ``labels`` / ``extra`` one struct type across the export (forge/items/typed.py),
    conforming every row in place; the export's Arrow schema and, per column, the keys kept as
    JSON text (recorded in the manifest for readers). A column no item fills stays a JSON text."""
    fields, json_keys = [], {}
    for f in ROW_FIELDS:
        if f in OBJECT_FIELDS:
            typ, as_json = typed_struct([r[f] for r in rows])
            json_keys[f] = sorted(as_json)
            for r in rows:
                r[f] = conform(r[f], typ, as_json) if typ is not None else (json.dumps(r[f]) if r[f] else "")
            fields.append(pa.field(f, typ if typ is not None else pa.string()))
        else:
            fields.append(pa.field(f, pa.list_(pa.string()) if f in _LIST_FIELDS else pa.string()))
    return pa.schema(fields + list(BLIND_FIELDS.items())), json_keys


def item_hashes(rows: list[dict[str, Any]], media_sha: dict[str, str]) -> dict[str, str]:
    return {r["item_id"]: content_hash(r, [media_sha.get(p, "") for p in r["media_paths"]], length=16) for r in rows}


def diff(prev: dict[str, str] | None, cur: dict[str, str]) -> dict[str, Any]:
    if prev is None:
        return {
            "added": len(cur),
            "removed": 0,
            "changed": 0,
            "unchanged": 0,
            "added_ids": sorted(cur),
            "removed_ids": [],
        }
    added = sorted(set(cur) - set(prev))
    removed = sorted(set(prev) - set(cur))
    changed = sorted(k for k in set(cur) & set(prev) if cur[k] != prev[k])
    return {
        "added": len(added),
        "removed": len(removed),
        "changed": len(changed),
        "unchanged": len(set(cur) & set(prev)) - len(changed),
        "added_ids": added,
        "removed_ids": removed,
        "changed_ids": changed,
    }


@dataclass
class ExportResult:
    status: str  # "written" | "unchanged"
    version: str
    path: Path
    content_hash: str
    manifest: dict[str, Any]


def licence_file(benchmark: str, table: pd.DataFrame) -> str:
    """LICENSE.md: no blanket licence; each item keeps its source's, as recorded."""
    return (
        f"# Licences of the {benchmark} export\n\n"
        "No single licence covers this dataset. Each item keeps the licence of the source it was built "
        "from, as recorded by the source (yt-dlp metadata, source tables); `unknown` means the source did "
        "not state one: check before redistributing those items. Per item: `provenance.jsonl`.\n\n"
        + md_table(table)
        + "\n"
    )


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def write_export(
    *,
    exports_dir: Path,
    data_dir: Path,
    spec: BenchmarkSpec,
    items: pd.DataFrame,
    provenance: pd.DataFrame,
    split_order: list[str],
    stage_config: dict[str, Any],
    card_context: dict[str, Any],
    forced_stub: bool = False,
    stub_items: int = 0,
    copy_media: bool = True,
) -> ExportResult:
    """Write a new version of ``spec``'s export, or return the latest if nothing changed."""
    benchmark = spec.name
    rows = export_rows(items)
    schema, json_keys = type_objects(rows)
    media = sorted({p for r in rows for p in r["media_paths"]})
    media_sha = {p: sha256_file(data_dir / p) for p in media}
    ihash = item_hashes(rows, media_sha)
    chash = content_hash(ihash, stage_config, forced_stub, length=16)
    bench_dir = exports_dir / benchmark
    versions = existing_versions(bench_dir)
    if versions:
        last = read_manifest(versions[-1][1])
        if last.get("content_hash") == chash:
            return ExportResult("unchanged", versions[-1][1].name, versions[-1][1], chash, last)
    prev = read_manifest(versions[-1][1]) if versions else None
    changes = diff(prev["item_hashes"] if prev else None, ihash) | {"previous": prev["version"] if prev else None}

    bench_dir.mkdir(parents=True, exist_ok=True)
    tmp = bench_dir / f".tmp-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        present = [s for s in split_order if any(r["split"] == s for r in rows)]
        present += sorted({r["split"] for r in rows} - set(present))
        for s in present:
            srows = [r for r in rows if r["split"] == s]
            _write_jsonl(tmp / "data" / s / "metadata.jsonl", srows)
            # what `datasets` reads (the card's config names it): typed by the schema, the same in
            # every split, where JSON inference would type an all-empty field differently per split
            pq.write_table(pa.Table.from_pylist(srows, schema=schema), tmp / "data" / s / METADATA_FILE)
            for r in srows:
                for p, f in zip(r["media_paths"], r["file_names"]):
                    dst = tmp / "data" / s / f
                    if not dst.exists():
                        dst.parent.mkdir(parents=True, exist_ok=True)
                        (shutil.copyfile if copy_media else os.link)(data_dir / p, dst)
            (tmp / "parquet").mkdir(exist_ok=True)
            prow = [dict(r, file_names=[f"data/{s}/{f}" for f in r["file_names"]]) for r in srows]
            pq.write_table(pa.Table.from_pylist(prow, schema=schema), tmp / "parquet" / f"{s}.parquet")
        prov_rows = [{k: _clean(v) for k, v in r.items()} for r in provenance.to_dict("records")]
        _write_jsonl(tmp / "provenance.jsonl", prov_rows)
        plots = draw_plots(items, tmp / "plots", split_order) if len(items) else []
        gallery = bool(len(items)) and draw_gallery(items, data_dir, tmp / "plots" / GALLERY)
        hub = {
            "languages": languages(items),
            "task_categories": task_categories(items, spec),
            "size_category": size_category(len(rows)),
            "features": hub_features(schema),
            "split_sizes": {s: sum(1 for r in rows if r["split"] == s) for s in present},
            "gallery": f"plots/{GALLERY}" if gallery else None,
        }
        created = datetime.now(UTC).isoformat(timespec="seconds")
        n = versions[-1][0] + 1 if versions else 1
        lic = license_summary(provenance)
        (tmp / "LICENSE.md").write_text(licence_file(benchmark, lic), encoding="utf-8")  # the card's license_link
        lmms = _lmms_folder(tmp, spec, f"v{n}", items, data_dir, bench_dir, forced_stub, stub_items)
        ctx = dict(
            card_context,
            benchmark=benchmark,
            paper=spec.paper,
            version=f"v{n}",
            items=items,
            split_order=present,
            licenses=list(lic.index) if not lic.empty else ["unknown"],
            license_table=lic,
            plots=plots,
            content_hash=chash,
            created_at=created,
            forced_stub=forced_stub,
            stub_items=stub_items,
            changes=changes,
            stage_config=stage_config,
            hub=hub,
        )
        ctx["extra_sections"] = [*(ctx.get("extra_sections") or []), card_section(lmms, benchmark, f"v{n}")]
        (tmp / "README.md").write_text(render_card(ctx), encoding="utf-8")
        files = {str(p.relative_to(tmp)): sha256_file(p) for p in sorted(tmp.rglob("*")) if p.is_file()}
        manifest = {
            "benchmark": benchmark,
            "content_hash": chash,
            "created_at": created,
            "n_items": len(rows),
            "splits": {s: sum(1 for r in rows if r["split"] == s) for s in present},
            "forced_stub": forced_stub,
            "stub_items": stub_items,
            "previous_version": changes["previous"],
            "changes": {k: changes[k] for k in ("added", "removed", "changed", "unchanged")},
            "item_hashes": ihash,
            "files": files,
            "config": json.loads(stable_json(stage_config)),
            "json_keys": json_keys,  # labels / extra keys stored as JSON text (forge.items.typed.restore)
        }
        # Take the next free version number; a concurrent build that got there first bumps us.
        while True:
            manifest["version"] = f"v{n}"
            (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
            final = bench_dir / f"v{n}"
            if final.exists():
                n += 1
                continue
            try:
                os.rename(tmp, final)
                break
            except OSError:
                if final.exists():
                    n += 1
                    continue
                raise
        if manifest["version"] != ctx["version"]:  # version bumped by a race: re-render the card's title
            if (final / LMMS_FOLDER).exists():  # task names and data path carry the version
                shutil.rmtree(final / LMMS_FOLDER)
                lmms = _lmms_folder(
                    final, spec, manifest["version"], items, data_dir, bench_dir, forced_stub, stub_items
                )
            ctx["extra_sections"][-1] = card_section(lmms, benchmark, manifest["version"])
            (final / "README.md").chmod(0o644)
            (final / "README.md").write_text(render_card(dict(ctx, version=manifest["version"])), encoding="utf-8")
        _freeze(final)
        return ExportResult("written", manifest["version"], final, chash, manifest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _lmms_folder(
    root: Path,
    spec: BenchmarkSpec,
    version: str,
    items: pd.DataFrame,
    data_dir: Path,
    bench_dir: Path,
    forced_stub: bool,
    stub_items: int,
) -> LmmsTasks:
    """The export's lmms-eval task folder (forge/export/lmms.py); none for unforced stub items."""
    if stub_items and not forced_stub:
        return LmmsTasks(left_out={"(all)": f"{stub_items} stub item(s) and the export was not forced"})
    return write_task_folder(root / LMMS_FOLDER, spec, version, items, data_dir, bench_dir / version)


def _freeze(path: Path) -> None:
    """Read-only files: a visible reminder (and a guard) that a version never changes."""
    for p in path.rglob("*"):
        if p.is_file():
            p.chmod(p.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def exports_frame(exports_dir: Path, benchmark: str, data_dir: Path | None = None) -> pd.DataFrame:
    """The ``exports`` table rows of one benchmark, rebuilt from the manifests on disk. ``path``
    is relative to the data dir (default: the parent of ``exports_dir``), so a copied data dir
    names its own exports (forge/storage/paths.py)."""
    data_dir = exports_dir.parent if data_dir is None else data_dir
    rows = []
    for n, d in existing_versions(exports_dir / benchmark):
        m = read_manifest(d)
        rows.append(
            {
                "benchmark": benchmark,
                "version": m["version"],
                "version_number": n,
                "path": stored_path(d, data_dir),
                "content_hash": m["content_hash"],
                "n_items": m["n_items"],
                "splits": json.dumps(m.get("splits", {})),
                "created_at": pd.Timestamp(m["created_at"]),
                "forced_stub": bool(m.get("forced_stub")),
                "stub_items": int(m.get("stub_items", 0)),
                "previous_version": m.get("previous_version"),
                "added": m["changes"]["added"],
                "removed": m["changes"]["removed"],
                "changed": m["changes"]["changed"],
            }
        )
    cols = [
        "benchmark",
        "version",
        "version_number",
        "path",
        "content_hash",
        "n_items",
        "splits",
        "created_at",
        "forced_stub",
        "stub_items",
        "previous_version",
        "added",
        "removed",
        "changed",
    ]
    return pd.DataFrame(rows, columns=cols)
