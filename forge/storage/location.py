"""Where the data lives: a local directory (the default, ``data/``) or an fsspec URL on object
storage (``SUBTEXT_DATA_URL=s3://bucket/prefix``; docs/operations.md "Object storage").

A local location keeps today's code path untouched. A remote one is reached through
``Remote``: every key is relative to the URL, so a stored path (``media/frames/ab.jpg``,
``tables/items/all.<stamp>.parquet``) names the same thing on every machine and no path is
shared between nodes. Tools that need a POSIX file (ffmpeg, OpenCV, SQLite, the DuckDB catalog
file) work in a private *work directory* per machine (``SUBTEXT_WORK_DIR``, default under the
system temp dir), never in the local data dir.

Credentials are never read from project files or from the URL: s3fs takes them from the
environment (``AWS_ACCESS_KEY_ID`` ..., ``AWS_ENDPOINT_URL`` for an S3-compatible store) or the
standard AWS configuration, and no message built here contains them. Throttling (503
SlowDown), server errors and dropped connections are retried by botocore with exponential
backoff ("standard" retry mode) and counted in ``FAULTS``.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

DATA_URL_ENV = "SUBTEXT_DATA_URL"
DATA_DIR_ENV = "SUBTEXT_DATA_DIR"
WORK_DIR_ENV = "SUBTEXT_WORK_DIR"
ATTEMPTS_ENV = "SUBTEXT_S3_MAX_ATTEMPTS"
DEFAULT_ATTEMPTS = 8  # botocore's standard mode: backoff up to 20 s between tries
_LOCAL_SCHEMES = {"", "file", "local"}

FAULTS: Counter[str] = Counter()  # retried faults seen by this process: "throttled", "server_error", "connection"
_FAULTS_LOCK = threading.Lock()


class StorageUnavailable(RuntimeError):
    """The data location cannot be used (missing bucket, rejected credentials, unreachable
    endpoint): raised before anything is written."""


def configured_location() -> str:
    """``SUBTEXT_DATA_URL`` when set, else ``SUBTEXT_DATA_DIR``, else ``data``."""
    return os.environ.get(DATA_URL_ENV, "").strip() or os.environ.get(DATA_DIR_ENV, "").strip() or "data"


def is_remote(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` is an object-storage URL (``s3://...``) rather than a local path."""
    if not isinstance(location, str):
        return False
    scheme = urlsplit(location).scheme.lower()
    return len(scheme) > 1 and scheme not in _LOCAL_SCHEMES  # one letter: a Windows drive


def local_path(location: str | os.PathLike[str]) -> Path:
    """A local location as a path (``file://`` stripped)."""
    text = os.fspath(location)
    if text.startswith("file://"):
        text = text[len("file://") :]
    return Path(text)


def work_dir(url: str) -> Path:
    """This machine's private scratch directory for ``url`` (``SUBTEXT_WORK_DIR`` overrides)."""
    base = os.environ.get(WORK_DIR_ENV, "").strip()
    if base:
        return Path(base).resolve()
    tag = hashlib.sha256(url.encode()).hexdigest()[:12]
    return Path(tempfile.gettempdir()) / "subtext-work" / tag


def local_base(location: str | None = None) -> Path:
    """The directory this machine writes its own files under (caches' working copies, tools'
    scratch): the work dir of a remote location, else the local data dir itself."""
    location = location or configured_location()
    return work_dir(location.rstrip("/")) if is_remote(location) else local_path(location)


def fault_counts() -> dict[str, int]:
    with _FAULTS_LOCK:
        return dict(FAULTS)


def _count_response(**kwargs: Any) -> None:
    """botocore ``response-received`` hook: count each attempt that failed in a retryable way."""
    exc, resp = kwargs.get("exception"), kwargs.get("response_dict") or {}
    status = resp.get("status_code", 0)
    kind = None
    if exc is not None:
        kind = "connection"
    elif status == 503:
        kind = "throttled"
    elif status >= 500:
        kind = "server_error"
    if kind:
        with _FAULTS_LOCK:
            FAULTS[kind] += 1


@dataclass
class Remote:
    """One object-storage root: ``url`` (``s3://bucket/prefix``), its fsspec filesystem, and
    key helpers relative to it."""

    url: str
    protocol: str
    root: str  # bucket/prefix, as the filesystem names it
    fs: Any

    @property
    def bucket(self) -> str:
        return self.root.split("/", 1)[0]

    def key(self, rel: str) -> str:
        """The filesystem path of ``rel`` (``bucket/prefix/rel``)."""
        rel = rel.strip("/")
        return f"{self.root}/{rel}" if rel else self.root

    def url_of(self, rel: str) -> str:
        return f"{self.protocol}://{self.key(rel)}"

    def object_key(self, rel: str) -> str:
        """The S3 key of ``rel`` (without the bucket)."""
        return self.key(rel).split("/", 1)[1]

    # -- whole objects -------------------------------------------------------------
    def get(self, rel: str) -> tuple[bytes, str] | None:
        """An object's bytes and ETag, from one GET (a replaced object is read whole: the old
        bytes or the new, never a mix); ``None`` when absent."""
        try:
            resp = self.fs.call_s3("get_object", Bucket=self.bucket, Key=self.object_key(rel))
        except FileNotFoundError:
            return None
        body = resp["Body"]
        data = _read_body(self.fs, body)
        return data, resp.get("ETag", "")

    def put(self, rel: str, data: bytes) -> None:
        """One PUT: the object appears whole or not at all."""
        self.fs.call_s3("put_object", Bucket=self.bucket, Key=self.object_key(rel), Body=data)

    def put_if(self, rel: str, data: bytes, etag: str | None) -> bool:
        """A conditional PUT: replace the object only if it still has ``etag`` (``None``: only
        if it does not exist). ``False`` when another writer got there first."""
        cond = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
        try:
            self.fs.call_s3("put_object", Bucket=self.bucket, Key=self.object_key(rel), Body=data, **cond)
        except (OSError, FileExistsError) as exc:
            if _precondition_failed(exc):
                return False
            raise
        return True

    def put_once(self, rel: str, data: bytes) -> bool:
        """Write a content-addressed object unless it exists; ``True`` when this call wrote it.
        A retried task finds its object and writes no second copy."""
        return self.put_if(rel, data, None)

    def delete(self, rel: str) -> None:
        try:
            self.fs.call_s3("delete_object", Bucket=self.bucket, Key=self.object_key(rel))
        except FileNotFoundError:
            pass

    def etag(self, rel: str) -> str | None:
        """The object's ETag from one HEAD; ``None`` when absent."""
        try:
            return self.fs.call_s3("head_object", Bucket=self.bucket, Key=self.object_key(rel)).get("ETag")
        except FileNotFoundError:
            return None

    def exists(self, rel: str) -> bool:
        try:
            self.fs.call_s3("head_object", Bucket=self.bucket, Key=self.object_key(rel))
        except FileNotFoundError:
            return False
        return True

    def listing(self, rel: str) -> dict[str, float]:
        """Objects directly or deeper under ``rel/``: name relative to ``rel`` -> last-modified (epoch s)."""
        prefix = self.object_key(rel).rstrip("/") + "/"
        out: dict[str, float] = {}
        token: dict[str, str] = {}
        while True:
            resp = self.fs.call_s3("list_objects_v2", Bucket=self.bucket, Prefix=prefix, **token)
            for obj in resp.get("Contents", []):
                out[obj["Key"][len(prefix) :]] = obj["LastModified"].timestamp()
            if not resp.get("IsTruncated"):
                return out
            token = {"ContinuationToken": resp["NextContinuationToken"]}

    def subdirs(self, rel: str) -> list[str]:
        prefix = self.object_key(rel).rstrip("/") + "/"
        names: list[str] = []
        token: dict[str, str] = {}
        while True:
            resp = self.fs.call_s3("list_objects_v2", Bucket=self.bucket, Prefix=prefix, Delimiter="/", **token)
            names += [p["Prefix"][len(prefix) :].rstrip("/") for p in resp.get("CommonPrefixes", [])]
            if not resp.get("IsTruncated"):
                return sorted(names)
            token = {"ContinuationToken": resp["NextContinuationToken"]}

    def presign(self, rel: str, expires_s: int) -> str:
        """A SigV4 pre-signed GET URL of ``rel`` (SigV4: what every S3 region and S3-compatible
        store accepts; the s3fs client would sign SigV2). The secret never appears in it."""
        signer = getattr(self, "_signer", None)
        if signer is None:
            from botocore.config import Config
            from botocore.session import get_session

            endpoint = self.fs.s3.meta.endpoint_url  # the endpoint the filesystem talks to
            config = Config(signature_version="s3v4", s3={"addressing_style": "path"})
            region = self.fs.s3.meta.region_name
            signer = get_session().create_client("s3", region_name=region, endpoint_url=endpoint, config=config)
            self._signer = signer
        params = {"Bucket": self.bucket, "Key": self.object_key(rel)}
        return signer.generate_presigned_url("get_object", Params=params, ExpiresIn=int(expires_s))

    def download(self, rel: str, dest: Path) -> Path:
        """Fetch an object into a local file (to a temp name, renamed: never a half file)."""
        dest.parent.mkdir(parents=True, exist_ok=True)
        got = self.get(rel)
        if got is None:
            raise FileNotFoundError(self.url_of(rel))
        fd, tmp = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(got[0])
            os.replace(tmp, dest)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        return dest


def _read_body(fs: Any, body: Any) -> bytes:
    """Read an aiobotocore streaming body on s3fs's event loop."""
    from fsspec.asyn import sync

    async def _read() -> bytes:
        async with body as stream:
            return await stream.read()

    return sync(fs.loop, _read)


def _precondition_failed(exc: BaseException) -> bool:
    """Whether a conditional PUT lost (412 PreconditionFailed, or 409 ConditionalRequestConflict
    when two conditional writes race)."""
    if isinstance(exc, FileExistsError):
        return True
    cause = exc.__cause__
    resp = getattr(cause, "response", None) or {}
    code = str(resp.get("Error", {}).get("Code", ""))
    status = resp.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return code in {"PreconditionFailed", "ConditionalRequestConflict", "412", "409"} or status in {409, 412}


_REMOTES: dict[str, Remote] = {}
_REMOTES_LOCK = threading.Lock()


def open_remote(url: str, check: bool = True, check_attempts: int | None = 2) -> Remote:
    """The ``Remote`` for ``url`` (one per process), checked once: a missing bucket, rejected
    credentials or an unreachable endpoint raise ``StorageUnavailable`` before anything is written.

    The check makes ``check_attempts`` tries (default 2: at a run's start an unreachable endpoint is
    reported in seconds, not after every backoff); ``None`` gives it the full retry budget, for a
    worker handed a location its driver has checked, whose start must ride out throttling."""
    url = url.rstrip("/")
    with _REMOTES_LOCK:
        remote = _REMOTES.get(url)
        if remote is None:
            if check:
                preflight(_make_remote(url, attempts=check_attempts))
            remote = _make_remote(url)
            _REMOTES[url] = remote
    return remote


def location_of(data_dir: str | os.PathLike[str]) -> str:
    """What a worker on another node should open for a store whose ``data_dir`` this is: the URL
    when it is this process's work dir of a remote location, else the directory itself."""
    resolved = Path(data_dir).resolve()
    with _REMOTES_LOCK:
        for url in _REMOTES:
            if work_dir(url) == resolved:
                return url
    return str(data_dir)


def forget_remotes() -> None:
    """Drop the per-process cache (tests that change the endpoint or credentials)."""
    with _REMOTES_LOCK:
        _REMOTES.clear()


def _make_remote(url: str, attempts: int | None = None) -> Remote:
    parts = urlsplit(url)
    if parts.username or parts.password or "@" in parts.netloc:
        raise StorageUnavailable(
            f"{DATA_URL_ENV} must not carry credentials: give them in the environment (AWS_ACCESS_KEY_ID, ...) "
            "or the AWS configuration"
        )
    protocol = parts.scheme.lower()
    if protocol not in {"s3", "s3a"}:
        raise StorageUnavailable(f"{DATA_URL_ENV}: scheme {protocol!r} is not supported (use s3://bucket/prefix)")
    if not parts.netloc:
        raise StorageUnavailable(f"{DATA_URL_ENV}={url!r} names no bucket")
    import s3fs  # only a remote location needs it

    attempts = attempts or int(os.environ.get(ATTEMPTS_ENV, "") or DEFAULT_ATTEMPTS)
    fs = s3fs.S3FileSystem(
        session=_session(),
        skip_instance_cache=True,  # a fresh client per process: the environment is read now
        use_listings_cache=False,  # another node's writes are seen at once
        config_kwargs={"retries": {"mode": "standard", "max_attempts": attempts}, "connect_timeout": 5},
    )
    fs.retries = 1  # botocore retries (and counts, below); s3fs's own loop would multiply them
    fs.connect()
    fs.s3.meta.events.register("response-received.s3", _count_response)
    root = (parts.netloc + parts.path).rstrip("/")
    return Remote(url=f"s3://{root}", protocol="s3", root=root, fs=fs)


_SESSION: list[Any] = []


def _session() -> Any:
    """One botocore session per process: its loaded service models are shared by every client
    (a new session re-reads them, ~0.5 s). Credentials are still resolved per client, from the
    environment as it is then."""
    if not _SESSION:
        from aiobotocore.session import AioSession

        _SESSION.append(AioSession())
    _SESSION[0]._credentials = None  # the session caches what it resolved; each new client looks again
    return _SESSION[0]


def preflight(remote: Remote) -> None:
    """One request that proves the bucket exists and the credentials may read and write it."""
    endpoint = remote.fs.s3.meta.endpoint_url
    probe = f".subtext-preflight/{os.getpid()}-{time.time_ns():x}"
    try:
        remote.fs.call_s3("head_bucket", Bucket=remote.bucket)
        remote.put(probe, b"")
        remote.delete(probe)
    except Exception as exc:  # noqa: BLE001 - every failure becomes the one clear message below
        raise StorageUnavailable(_explain(exc, remote.bucket, endpoint)) from None


def _explain(exc: BaseException, bucket: str, endpoint: str) -> str:
    """One sentence naming the cause; never the credentials (botocore's messages hold none)."""
    text = f"{type(exc).__name__}: {exc}"
    cause = exc.__cause__ or exc.__context__
    code = str(getattr(cause, "response", {}).get("Error", {}).get("Code", "")) if cause else ""
    low = (text + " " + code).lower()
    if isinstance(exc, FileNotFoundError) or "nosuchbucket" in low or code == "404":
        why = f"bucket {bucket!r} does not exist"
    elif isinstance(exc, PermissionError) or any(
        s in low for s in ("accessdenied", "invalidaccesskeyid", "signaturedoesnotmatch", "403", "credentials")
    ):
        why = f"the credentials (from the environment or AWS configuration) were refused for bucket {bucket!r}"
    elif any(s in low for s in ("connect", "endpoint", "timeout", "timed out", "name or service")):
        why = "the endpoint cannot be reached"
    else:
        why = f"the bucket {bucket!r} cannot be used ({text[:300]})"
    return f"storage {endpoint} unusable: {why}; nothing was written"
