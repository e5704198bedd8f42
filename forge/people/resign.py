"""Pre-signed media URLs of live tasks, renewed before they expire (docs/operations.md "Object
storage").

On object storage a task names its media by pre-signed URLs (``project.served``), each valid
``SUBTEXT_PRESIGN_S`` seconds (at most 7 days). A push keeps a task whose item did not change, so
without renewal a task people have yet to answer would show no media after a week. So a push
compares each kept task's URLs with the ones it would hand a new task: a URL that expires within
the renewal window (a day, or half its lifetime when that is shorter) is replaced by the fresh URL
of the *same object*, and the task's ``data`` is updated in place (``PATCH /api/tasks/<id>``).
Only URLs change: the task's id, identity (``meta``), predictions and annotations stay as they are,
so people's work is untouched and the push still matches the task by its key and revision.

Label Studio's own S3 storage (which signs on every view) is not used: it would need the bucket's
credentials inside Label Studio and its own import of the objects, while the tasks are made by the
push and name only the objects they show.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

WINDOW = timedelta(days=1)  # renew a URL with less than this left (or half its lifetime, if shorter)


def expiry(url: str) -> tuple[datetime, timedelta] | None:
    """When a SigV4 pre-signed URL stops working, and its lifetime; ``None`` for any other text."""
    if not url.startswith(("http://", "https://")) or "X-Amz-Signature=" not in url:
        return None
    q = parse_qs(urlsplit(url).query)
    try:
        signed = datetime.strptime(q["X-Amz-Date"][0], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        life = timedelta(seconds=int(q["X-Amz-Expires"][0]))
    except (KeyError, IndexError, ValueError):
        return None
    return signed + life, life


def _same_object(a: str, b: str) -> bool:
    pa, pb = urlsplit(a), urlsplit(b)
    return (pa.scheme, pa.netloc, pa.path) == (pb.scheme, pb.netloc, pb.path)


def _due(url: str, now: datetime) -> bool:
    found = expiry(url)
    if found is None:
        return False
    ends, life = found
    return ends - now < min(WINDOW, life / 2)


def _renew(live: Any, fresh: Any, now: datetime) -> tuple[Any, bool]:
    if isinstance(live, str):
        if isinstance(fresh, str) and _due(live, now) and expiry(fresh) and _same_object(live, fresh):
            return fresh, True
        return live, False
    if isinstance(live, dict) and isinstance(fresh, dict):
        out, changed = {}, False
        for k, v in live.items():
            out[k], c = _renew(v, fresh[k], now) if k in fresh else (v, False)
            changed |= c
        return out, changed
    if isinstance(live, list) and isinstance(fresh, list) and len(live) == len(fresh):
        pairs = [_renew(v, f, now) for v, f in zip(live, fresh, strict=True)]
        return [v for v, _ in pairs], any(c for _, c in pairs)
    return live, False


def renewed(live: dict[str, Any] | None, fresh: dict[str, Any], now: datetime | None = None) -> dict[str, Any] | None:
    """``live`` (a kept task's data) with each pre-signed URL that is due replaced by ``fresh``'s
    URL of the same object at the same place; ``None`` when nothing is due (the task stays as it is).
    A URL of another object, and everything that is not such a URL, is kept as it is."""
    if not isinstance(live, dict):
        return None
    out, changed = _renew(live, fresh, now or datetime.now(UTC))
    return out if changed else None
