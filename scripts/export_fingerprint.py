"""Fingerprint a data dir's tables and exports by content, to prove a refactor changed no output.

``python scripts/export_fingerprint.py DATA_DIR > before.json`` records, for every live partition
of every table (``tables/``, read through its manifest) and every Parquet file under ``exports/``:
the row count, a hash of the sorted rows (never the file bytes: Parquet writers differ in
metadata) and one hash per column. Other export files (cards, manifests, JSONL) get a byte hash.
``python scripts/export_fingerprint.py --compare before.json after.json [--ignore COL ...]`` says
which tables, rows or columns differ; columns named by ``--ignore`` (timestamps, run ids) are left
out of the row hashes: ``COL`` everywhere, ``PREFIX:COL`` only where the partition's key
(``tables/<table>/<partition>`` or ``exports/<path>``) starts with PREFIX, e.g.
``tables/exports/:path``. Exit status 1 when anything differs.
``python scripts/export_fingerprint.py --find TEXT [TEXT ...] --in FP.json`` lists the partitions
and columns whose values contain TEXT (a server address, the data dir), to find what leaks
a run's environment into rows.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a file, like perf/

from forge.storage import manifest


def _canon(v: Any) -> Any:
    """A JSON-able value whose text is the same for equal contents (bytes, dates, numpy scalars)."""
    if isinstance(v, dict):
        return {str(k): _canon(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_canon(x) for x in v]
    if isinstance(v, bytes):
        return hashlib.sha256(v).hexdigest()
    if isinstance(v, float) and v != v:
        return "NaN"
    if v is None or isinstance(v, bool | int | float | str):
        return v
    return str(v)


def _sha(lines: list[str]) -> str:
    h = hashlib.sha256()
    for line in sorted(lines):
        h.update(line.encode())
        h.update(b"\n")
    return h.hexdigest()[:16]


def parquet_print(path: Path) -> dict[str, Any]:
    rows = pq.read_table(path).to_pylist()
    cols = sorted({c for r in rows for c in r}) or pq.read_schema(path).names
    return {
        "rows": len(rows),
        "columns": {c: _sha([json.dumps(_canon(r.get(c)), sort_keys=True) for r in rows]) for c in cols},
        "row_json": [json.dumps(_canon(r), sort_keys=True) for r in rows],
    }


def fingerprint(data_dir: Path) -> dict[str, Any]:
    out: dict[str, Any] = {"tables": {}, "exports": {}, "export_files": {}}
    tables = data_dir / "tables"
    for tdir in sorted(p for p in tables.iterdir() if p.is_dir()) if tables.is_dir() else []:
        for part, name in sorted(manifest.load(tdir).parts.items()):
            out["tables"][f"{tdir.name}/{part}"] = parquet_print(tdir / name)
    exports = data_dir / "exports"
    for f in sorted(exports.rglob("*")) if exports.is_dir() else []:
        if not f.is_file():
            continue
        rel = str(f.relative_to(exports))
        if f.suffix == ".parquet":
            out["exports"][rel] = parquet_print(f)
        else:
            out["export_files"][rel] = hashlib.sha256(f.read_bytes()).hexdigest()[:16]
    return out


def _ignored(key: str, ignore: set[str]) -> set[str]:
    """The columns left out of partition ``key`` (``tables/...`` or ``exports/...``)."""
    out = set()
    for entry in ignore:
        prefix, _, col = entry.rpartition(":")
        if key.startswith(prefix):
            out.add(col)
    return out


def _row_hash(p: dict[str, Any], ignore: set[str]) -> str:
    rows = [{k: v for k, v in json.loads(r).items() if k not in ignore} for r in p["row_json"]]
    return _sha([json.dumps(r, sort_keys=True) for r in rows])


def find(fp: dict[str, Any], texts: list[str]) -> dict[str, list[str]]:
    """``kind/key`` -> the columns whose values (as fingerprinted) contain any of ``texts``."""
    hits: dict[str, set[str]] = {}
    for kind in ("tables", "exports"):
        for key, p in fp[kind].items():
            for r in p["row_json"]:
                if any(t in r for t in texts):
                    for col, v in json.loads(r).items():
                        if any(t in json.dumps(v) for t in texts):
                            hits.setdefault(f"{kind}/{key}", set()).add(col)
    return {k: sorted(v) for k, v in sorted(hits.items())}


def compare(a: dict[str, Any], b: dict[str, Any], ignore: set[str]) -> list[str]:
    diffs: list[str] = []
    for kind in ("tables", "exports"):
        for key in sorted(set(a[kind]) | set(b[kind])):
            if key not in a[kind] or key not in b[kind]:
                diffs.append(f"{kind}/{key}: only in {'after' if key not in a[kind] else 'before'}")
                continue
            x, y = a[kind][key], b[kind][key]
            skip = _ignored(f"{kind}/{key}", ignore)
            if x["rows"] != y["rows"]:
                diffs.append(f"{kind}/{key}: rows {x['rows']} → {y['rows']}")
            cols = [c for c in sorted(set(x["columns"]) | set(y["columns"])) if c not in skip]
            bad = [c for c in cols if x["columns"].get(c) != y["columns"].get(c)]
            if bad or _row_hash(x, skip) != _row_hash(y, skip):
                diffs.append(f"{kind}/{key}: columns differ: {', '.join(bad) or '(row pairing)'}")
    for key in sorted(set(a["export_files"]) | set(b["export_files"])):
        if a["export_files"].get(key) != b["export_files"].get(key):
            diffs.append(f"export file {key}: bytes differ (informational: cards and manifests carry timestamps)")
    return diffs


def summary(fp: dict[str, Any], ignore: set[str]) -> dict[str, Any]:
    return {
        "tables": len(fp["tables"]),
        "table_rows": sum(p["rows"] for p in fp["tables"].values()),
        "export_parquet_files": len(fp["exports"]),
        "export_rows": sum(p["rows"] for p in fp["exports"].values()),
        "export_other_files": len(fp["export_files"]),
        "content": _sha(
            [
                k + _row_hash(p, _ignored(f"{kind}/{k}", ignore))
                for kind in ("tables", "exports")
                for k, p in fp[kind].items()
            ]
        ),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("data_dir", nargs="?", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--ignore", nargs="*", default=[], help="columns left out: COL or KEY_PREFIX:COL")
    ap.add_argument("--find", nargs="+", metavar="TEXT", help="list the columns whose values contain TEXT")
    ap.add_argument("--in", dest="find_in", type=Path, metavar="FP", help="the fingerprint --find reads")
    args = ap.parse_args(argv)
    ignore = set(args.ignore)
    if args.find:
        if args.find_in is None:
            ap.error("--find needs --in FP.json")
        hits = find(json.loads(args.find_in.read_text()), args.find)
        print("\n".join(f"{k}: {', '.join(cols)}" for k, cols in hits.items()) or "not found")
        return 1 if hits else 0
    if args.compare:
        a, b = (json.loads(p.read_text()) for p in args.compare)
        diffs = compare(a, b, ignore)
        print(json.dumps({"before": summary(a, ignore), "after": summary(b, ignore)}, indent=1))
        print("\n".join(diffs) or "identical")
        return 1 if any(not d.startswith("export file") for d in diffs) else 0
    if args.data_dir is None:
        ap.error("give DATA_DIR or --compare BEFORE AFTER")
    json.dump(fingerprint(args.data_dir), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
