"""Query the catalog without the DuckDB CLI: ``python -m forge.console.query`` (``make query`` runs it).

    python -m forge.console.query query "select stage, reason, count(*) from rejects group by all"
    python -m forge.console.query query --file my.sql    # several statements: the last one's rows are shown
    python -m forge.console.query tables          # every table and view, its rows and what it holds

Reads ``$SUBTEXT_DATA_URL`` or ``$SUBTEXT_DATA_DIR`` (default ``data``) through ``open_catalog``
(read-only, relative view paths resolved; on object storage, a catalog of the bucket rebuilt on
this machine, nothing written to the bucket). A bad statement prints one ``error:`` line and exits 1; no SQL prints the
usage line and exits 2.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import duckdb

import forge.benchmarks.registry  # noqa: F401  (hands the contracts the benchmarks' own tables)
from forge.storage import TableStore, open_catalog, quote_ident
from forge.storage.contracts import all_contracts
from forge.storage.location import StorageUnavailable, configured_location

USAGE = 'usage: make query Q="select * from frames limit 5"   (Q=tables lists the tables; F=file.sql runs a file)'


class QueryError(Exception):
    """A query that could not run, in one line."""


def one_line(exc: BaseException) -> str:
    """DuckDB's multi-line message (type, text, hint, ``LINE 1: …`` and its caret) as one line."""
    lines = [ln.strip() for ln in str(exc).splitlines()]
    keep = [ln for ln in lines if ln and not ln.startswith("LINE ") and set(ln) != {"^"}]
    return " ".join(keep) or type(exc).__name__


def _connect(data_dir: str | Path) -> duckdb.DuckDBPyConnection:
    try:
        store = TableStore(data_dir)
    except StorageUnavailable as exc:
        raise QueryError(str(exc)) from None
    if store.remote is None and not store.catalog_path.exists():
        raise QueryError(f"no catalog at {store.catalog_path}: build something first (make demo)")
    return open_catalog(store)


def run_query(data_dir: str | Path, sql: str, max_rows: int = 40) -> str:
    """The result as a text table (DuckDB's box rendering), or a note for a statement without rows."""
    con = _connect(data_dir)
    try:
        rel = con.sql(sql)
        if rel is None:
            return "ok"
        width = os.get_terminal_size().columns if sys.stdout.isatty() else 200
        return _render(rel, max_rows if max_rows > 0 else 10**9, width)
    except duckdb.Error as exc:
        raise QueryError(one_line(exc)) from None
    finally:
        con.close()


def _render(rel: duckdb.DuckDBPyRelation, max_rows: int, width: int) -> str:
    import io
    from contextlib import redirect_stdout

    buf = io.StringIO()
    with redirect_stdout(buf):  # show() prints; the catalog's row count is only known by running it
        rel.show(max_rows=max_rows, max_width=width)
    return buf.getvalue().rstrip("\n")


def list_tables(data_dir: str | Path) -> list[tuple[str, int | None, str]]:
    """(name, rows or None when unreadable, description) of every view in the catalog."""
    con = _connect(data_dir)
    contracts = all_contracts()
    out = []
    try:
        names = [
            r[0] for r in con.execute("select view_name from duckdb_views() where not internal order by 1").fetchall()
        ]
        for name in names:
            try:
                rows = con.execute(f"select count(*) from {quote_ident(name)}").fetchone()[0]
            except duckdb.Error:
                rows = None
            c = contracts.get(name)
            what = " ".join(c.description.split()) if c is not None else "derived view"
            out.append((name, rows, what if len(what) <= 90 else what[:89] + "…"))
    finally:
        con.close()
    return out


def sql_text(args: argparse.Namespace) -> str:
    """The SQL from the argument, a file (``make query F=file.sql``) or an environment variable
    (``make query Q="..."``: passed through the environment, so double quotes and several lines
    reach DuckDB as typed, with no shell quoting in between)."""
    if getattr(args, "file", None):
        return sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
    if getattr(args, "sql_env", None):
        return os.environ.get(args.sql_env, "")
    return getattr(args, "sql", "") or ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m forge.console.query", description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=configured_location())
    sub = parser.add_subparsers(dest="command")
    q = sub.add_parser("query", help="run SQL against the catalog (the last statement's rows are shown)")
    q.add_argument("sql", nargs="?", default="")
    q.add_argument("--file", "-f", help="read the SQL from this file ('-' = stdin)")
    q.add_argument("--sql-env", metavar="NAME", help="read the SQL from this environment variable (make query Q=...)")
    q.add_argument("--max-rows", type=int, default=40, help="rows shown (0 = all)")
    sub.add_parser("tables", help="every table and view, with row counts")
    args = parser.parse_args(argv)
    try:
        sql = sql_text(args).strip()
    except OSError as exc:
        print(f"error: cannot read the SQL file: {exc}", file=sys.stderr)
        return 1
    if args.command is None or (args.command == "query" and not sql):
        print(USAGE, file=sys.stderr)
        return 2
    try:
        if args.command == "tables" or sql.lower() == "tables":
            rows = list_tables(args.data_dir)
            w = max((len(n) for n, _, _ in rows), default=5)
            for name, n, what in rows:
                print(f"{name:<{w}}  {'?' if n is None else n:>8}  {what}")
        else:
            print(run_query(args.data_dir, sql, args.max_rows))
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
