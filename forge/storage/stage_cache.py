"""Unchanged work is not redone: stage results addressed by the content they depend on.

A re-run of the media and vision stages with the same inputs, weights and settings should
cost reads, not decoding, OCR or detection. ``StageCache`` (one SQLite file in WAL mode,
``<data_dir>/cache/stages.sqlite``, shared by every process) stores:

* **per-unit results** (``get`` / ``put``): one JSON value per key, e.g. the OCR of one
  image or the YOLO boxes of one frame. The key is a hash of the stage, its code version,
  the input file's content hash, the model weights' hash and the settings that change the
  result, so a changed OCR threshold (applied after OCR) reuses every OCR result, while new
  weights or another ``max_side`` recompute;
* **per-batch results** (``get_frames`` / ``put_frames``): the rows and rejects a whole
  batch produced, as Parquet files under ``<data_dir>/cache/stages/``, reused only while
  every media file the rows point at still exists;
* **file digests**: the SHA-256 of a file, remembered by (path, size, mtime), so checking
  that an input is unchanged does not re-read it.

Keys never contain a time or a random value; a result computed by a killed run is simply
absent (writes are single statements / atomic renames).

On object storage (``SUBTEXT_DATA_URL``) the SQLite file and the Parquet files are this
machine's working copy, in its work dir; every result and every batch's frames are also
published to the bucket under their key (``cache/stages/<stage>/...``,
``forge/storage/shared_entries.py``), and a miss here reads the bucket. A batch's media files
are checked in the bucket, where the media live. File digests stay per machine (they remember
this machine's files).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sqlite3
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from forge.storage.location import Remote
from forge.storage.rejects import RejectLog
from forge.storage.shared_entries import SharedEntries
from forge.storage.tables import TableStore, safe_name


def content_key(*parts: Any) -> str:
    """A stable hash of JSON-able parts (dict keys sorted, tuples as lists)."""
    text = json.dumps(parts, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


class StageCache:
    def __init__(self, root: str | os.PathLike[str], remote: Remote | None = None):
        self.root = Path(root)
        self.remote = remote  # the bucket the entries are also published to
        self.root.mkdir(parents=True, exist_ok=True)
        self.db_path = self.root / "stages.sqlite"
        self._local = threading.local()
        self.hits: Counter[str] = Counter()
        self.misses: Counter[str] = Counter()
        with self._con() as con:
            con.execute(
                "create table if not exists results (key text primary key, stage text, value text, created real)"
            )
            con.execute(
                "create table if not exists digests (path text primary key, size integer, mtime_ns integer, sha text)"
            )

    @classmethod
    def for_store(cls, store: TableStore) -> StageCache:
        return cls(store.data_dir / "cache", store.remote)

    def _shared(self, stage: str) -> SharedEntries | None:
        return SharedEntries(self.remote, f"stages/{safe_name(stage)}") if self.remote is not None else None

    def _con(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.db_path, timeout=60, isolation_level=None)
            con.execute("pragma journal_mode=wal")
            con.execute("pragma synchronous=normal")
            self._local.con = con
        return con

    # -- per-unit results --------------------------------------------------------------
    def get(self, stage: str, key: str) -> Any | None:
        row = self._con().execute("select value from results where key = ?", (f"{stage}:{key}",)).fetchone()
        if row is None and (shared := self._shared(stage)) is not None:
            found = self._adopt(stage, shared.get_many([key]))
            row = (found[key],) if key in found else None
        (self.hits if row else self.misses)[stage] += 1
        return json.loads(row[0]) if row else None

    def _adopt(self, stage: str, published: dict[str, bytes]) -> dict[str, str]:
        """Keep entries read from the bucket in the working copy; their JSON text by key."""
        texts = {k: v.decode() for k, v in published.items()}
        if texts:
            self._insert(stage, texts)
        return texts

    def get_many(self, stage: str, keys: Iterable[str]) -> dict[str, Any]:
        """The cached values among ``keys`` (hits and misses counted)."""
        keys = list(dict.fromkeys(keys))
        found: dict[str, Any] = {}
        con = self._con()
        for i in range(0, len(keys), 500):
            chunk = keys[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for k, v in con.execute(
                f"select key, value from results where key in ({marks})", [f"{stage}:{k}" for k in chunk]
            ):
                found[k.split(":", 1)[1]] = json.loads(v)
        missing = [k for k in keys if k not in found]
        if missing and (shared := self._shared(stage)) is not None:
            found.update({k: json.loads(v) for k, v in self._adopt(stage, shared.get_many(missing)).items()})
        self.hits[stage] += len(found)
        self.misses[stage] += len(keys) - len(found)
        return found

    def put(self, stage: str, key: str, value: Any) -> None:
        self.put_many(stage, {key: value})

    def put_many(self, stage: str, values: dict[str, Any]) -> None:
        if not values:
            return
        texts = {k: json.dumps(v, default=str) for k, v in values.items()}
        self._insert(stage, texts)
        if (shared := self._shared(stage)) is not None:
            shared.put_many({k: t.encode() for k, t in texts.items()})

    def _insert(self, stage: str, texts: dict[str, str]) -> None:
        now = time.time()
        con = self._con()
        con.execute("begin immediate")
        try:
            con.executemany(
                "insert or replace into results values (?, ?, ?, ?)",
                [(f"{stage}:{k}", stage, t, now) for k, t in texts.items()],
            )
            con.execute("commit")
        except BaseException:
            con.execute("rollback")
            raise

    # -- per-batch tables ----------------------------------------------------------------
    def _frame_path(self, stage: str, key: str, name: str) -> Path:
        return self.root / "stages" / safe_name(stage) / f"{key}.{name}.parquet"

    def put_frames(self, stage: str, key: str, frames: dict[str, pd.DataFrame]) -> None:
        """Store the frames a batch produced (``{"rows": df, "rejects": df}``); the index
        entry goes last, so a killed write is a miss, never a partial hit."""
        for name, df in frames.items():
            path = self._frame_path(stage, key, name)
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
            os.close(fd)
            try:
                pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp)
                os.replace(tmp, path)
            finally:
                if os.path.exists(tmp):
                    os.unlink(tmp)
            if self.remote is not None:  # before the index entry: a published entry's files exist
                self.remote.put(self._frame_rel(stage, key, name), path.read_bytes())
        self.put(stage, key, sorted(frames))

    def _frame_rel(self, stage: str, key: str, name: str) -> str:
        return f"cache/stages/{safe_name(stage)}/frames/{key}.{name}.parquet"

    def _frame_file(self, stage: str, key: str, name: str) -> Path:
        """The frame's local file, fetched from the bucket when this machine lacks it."""
        path = self._frame_path(stage, key, name)
        if self.remote is not None and not path.is_file():
            self.remote.download(self._frame_rel(stage, key, name), path)
        return path

    def get_frames(
        self, stage: str, key: str, data_dir: Path | None = None, path_columns: Iterable[str] = ()
    ) -> dict[str, pd.DataFrame] | None:
        """The stored frames, or None when absent or when a file they name under ``data_dir``
        (in ``path_columns`` of the ``rows`` frame) is gone."""
        names = self.get(stage, key)
        if names is None:
            return None
        try:
            out = {n: pq.read_table(self._frame_file(stage, key, n)).to_pandas() for n in names}
        except (OSError, pa.ArrowInvalid):
            self._miss(stage)
            return None
        rows = out.get("rows")
        if rows is not None and data_dir is not None:
            for col in path_columns:
                if col in rows and not all(self._media_exists(data_dir, p) for p in rows[col].dropna()):
                    self._miss(stage)
                    return None
        return out

    def _media_exists(self, data_dir: Path, stored: str) -> bool:
        """A media file a cached row names: here, or (on object storage) in the bucket."""
        if (data_dir / stored).is_file():
            return True
        return self.remote is not None and not Path(stored).is_absolute() and self.remote.exists(stored)

    def _miss(self, stage: str) -> None:  # counted as a hit by get(), but unusable
        self.hits[stage] -= 1
        self.misses[stage] += 1

    # -- input fingerprints --------------------------------------------------------------
    def file_digest(self, path: str | os.PathLike[str]) -> str:
        """SHA-256 of a file's content, re-read only when its size or mtime changed."""
        p = Path(path).resolve()
        st = p.stat()
        con = self._con()
        row = con.execute("select size, mtime_ns, sha from digests where path = ?", (str(p),)).fetchone()
        if row and row[0] == st.st_size and row[1] == st.st_mtime_ns:
            return row[2]
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        sha = h.hexdigest()
        con.execute("insert or replace into digests values (?, ?, ?, ?)", (str(p), st.st_size, st.st_mtime_ns, sha))
        return sha

    def tree_digest(self, path: str | os.PathLike[str]) -> str:
        """Digest of a weights file or of every file under a weights directory ('' if absent)."""
        p = Path(path)
        if p.is_file():
            return self.file_digest(p)
        if not p.is_dir():
            return ""
        files = sorted(f for f in p.rglob("*") if f.is_file())
        return content_key([(str(f.relative_to(p)), self.file_digest(f)) for f in files])

    def summary(self) -> dict[str, dict[str, int]]:
        return {
            s: {"reused": self.hits[s], "computed": self.misses[s]} for s in sorted(set(self.hits) | set(self.misses))
        }


def frame_digest(frame: pd.DataFrame) -> str:
    """A content hash of a frame's rows (column order and dtypes included)."""
    buf = io.BytesIO()
    frame.reset_index(drop=True).to_json(buf, orient="split", date_format="iso", default_handler=str)
    return hashlib.sha256(buf.getvalue()).hexdigest()


def reuse_batch(
    cache: StageCache | None,
    stage: str,
    key: str,
    log: RejectLog,
    compute: Callable[[], pd.DataFrame],
    data_dir: Path,
    path_columns: Iterable[str] = ("path",),
) -> pd.DataFrame:
    """A batch's rows (and its rejects, into ``log``) from the cache when ``key`` was computed
    before and its media files are still there; otherwise ``compute()`` and remember it."""
    if cache is not None:
        hit = cache.get_frames(stage, key, data_dir, path_columns)
        if hit is not None:
            log.rows = [{k: (None if _isna(v) else v) for k, v in r.items()} for r in hit["rejects"].to_dict("records")]
            return hit["rows"]
    rows = compute()
    if cache is not None:
        cache.put_frames(stage, key, {"rows": rows, "rejects": log.frame()})
    return rows


def _isna(v: Any) -> bool:
    return not isinstance(v, (list, tuple, dict)) and bool(pd.isna(v))
