"""What untrusted ingest input may do: expand variables, name local paths, reach hosts.

Inbox files, URL lists and sources YAML are written by anyone with write access to the
inbox (docs/security.md). Everything they name passes through this module:

* **variables** — ``${NAME}`` expands from the caller's explicit values, or from the
  environment only when ``NAME`` is allowed: the project's own ``SUBTEXT_*`` settings that
  are not secret-looking, plus names listed in ``allowed_variables``. Any other name is a
  :class:`PolicyViolation` (``variable_not_allowed``) that names the variable, never its value;
* **paths** — :func:`confine` resolves a path (``..`` and symlinks included) and refuses it
  unless it lies inside one of the policy's roots (``path_outside_roots`` /
  ``symlink_escape``); only regular files are read, and at most ``max_text_file_bytes`` of
  a list or table (:func:`read_text_capped`);
* **network** — :func:`check_url` admits http(s) URLs whose host resolves only to global
  addresses; loopback, private, link-local (cloud metadata), CGNAT, multicast and reserved
  addresses are refused (``address_not_allowed``) unless ``allowed_hosts`` names the host,
  the address or its network. :func:`network_guard` enforces the same rule on every socket
  ``connect`` made while it is active (a Python audit hook), so a redirect or a DNS answer
  that changes between the check and the request cannot reach a refused address either.

:class:`IngestPolicy` holds the settings; the pipeline builds it from the ``ingest`` resource
(``resources/ingest.py``) with the data dir as a root. Its defaults are the safe ones.
"""

from __future__ import annotations

import contextlib
import contextvars
import ipaddress
import os
import socket
import stat
import sys
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE", "PRIVATE")
# Names that reach instance metadata services without being an IP literal.
METADATA_HOSTS = frozenset(
    {"metadata", "metadata.google.internal", "metadata.goog", "instance-data", "instance-data.ec2.internal"}
)
URL_SCHEMES = ("http", "https")
# Demuxers a video file may be opened with (FFmpeg's format_whitelist): real containers only,
# never playlist / concat demuxers (hls, dash, concat, ...) that would make FFmpeg open other
# files or URLs named inside a hostile "video".
VIDEO_DEMUXERS = "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi,mpegts,flv,mpeg,mpegvideo,ogg,h264,hevc,m4v,asf,gif"


class PolicyViolation(Exception):
    """Input refused by policy; ``reason`` is the stable reject code."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


class AddressRefused(PolicyViolation, ConnectionRefusedError):
    """Raised inside ``connect()`` by the guard: libraries see a refused connection."""


@dataclass(frozen=True)
class IngestPolicy:
    """Limits for untrusted sources. ``roots=None`` means unconfined paths: only for trusted
    library callers; the pipeline always passes the data dir and the configured roots."""

    roots: tuple[str, ...] | None = None
    allowed_hosts: tuple[str, ...] = ()
    allowed_variables: tuple[str, ...] = ()
    max_download_bytes: int = 2 * 1024**3  # per downloaded file / local media file
    max_duration_s: float = 4 * 3600.0  # any video, whatever the source's own max_duration_s
    max_playlist_items: int = 200  # entries listed from one playlist / channel / search
    max_text_file_bytes: int = 16 * 1024**2  # sources YAML, URL lists, caption tables
    max_urls_per_source: int = 10_000
    max_folder_files: int = 100_000
    max_video_pixels: int = 7680 * 4320  # 8K
    max_video_frames: int = 4 * 3600 * 120  # duration x frame rate

    def with_roots(self, *roots: str | os.PathLike[str]) -> IngestPolicy:
        from dataclasses import replace

        have = list(self.roots or ())
        return replace(self, roots=tuple(dict.fromkeys([*have, *(str(Path(r).resolve()) for r in roots)])))


# -- variables -------------------------------------------------------------------------


def variable_allowed(name: str, allowed: Collection[str] = ()) -> bool:
    if name in allowed:
        return True
    return name.startswith("SUBTEXT_") and not any(m in name.upper() for m in SECRET_MARKERS)


def environment_variables(allowed: Collection[str] = ()) -> dict[str, str]:
    """The environment as seen by ``${...}``: allowed names only."""
    return {k: v for k, v in os.environ.items() if variable_allowed(k, allowed)}


def refused_variable_message(name: str) -> str:
    return (
        f"placeholder ${{{name}}} is not allowed: only the project's non-secret SUBTEXT_* settings and "
        "names listed in the ingest resource's allowed_variables (or SUBTEXT_ALLOWED_VARIABLES) expand"
    )


# -- paths -----------------------------------------------------------------------------


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def confine(path: str | os.PathLike[str], policy: IngestPolicy, what: str = "path") -> Path:
    """``path`` resolved (symlinks and ``..`` followed) if it lies inside the policy's roots."""
    p = Path(path)
    if not p.is_absolute():
        raise PolicyViolation("path_outside_roots", f"{what} {str(path)!r} is not absolute")
    real = p.resolve()
    if policy.roots is None:
        return real
    roots = [Path(r).resolve() for r in policy.roots]
    if any(_within(real, r) for r in roots):
        return real
    lexical = Path(os.path.normpath(p))
    if any(_within(lexical, r) for r in roots):
        raise PolicyViolation("symlink_escape", f"{what} {p.name!r} is a link that leads outside the allowed roots")
    raise PolicyViolation(
        "path_outside_roots",
        f"{what} {str(path)!r} is outside the allowed roots "
        "(the inbox, the data dir and the ingest resource's allowed_roots)",
    )


def regular_file(path: Path, what: str = "file") -> os.stat_result:
    """stat of a regular file; FIFOs, devices, sockets and folders are refused."""
    try:
        st = path.stat()
    except OSError as exc:
        raise PolicyViolation("missing_file", f"{what} {path.name!r} cannot be read ({type(exc).__name__})") from exc
    if not stat.S_ISREG(st.st_mode):
        raise PolicyViolation("not_a_regular_file", f"{what} {path.name!r} is not a regular file")
    return st


def read_text_capped(path: Path, policy: IngestPolicy, what: str = "file") -> str:
    """A confined, regular, not-too-large text file."""
    real = confine(path, policy, what)
    st = regular_file(real, what)
    if st.st_size > policy.max_text_file_bytes:
        raise PolicyViolation(
            "too_large", f"{what} {path.name!r} has {st.st_size} bytes > {policy.max_text_file_bytes}"
        )
    with open(real, "rb") as fh:
        data = fh.read(policy.max_text_file_bytes + 1)
    if len(data) > policy.max_text_file_bytes:
        raise PolicyViolation("too_large", f"{what} {path.name!r} is larger than {policy.max_text_file_bytes} bytes")
    return data.decode("utf-8", errors="replace")


# -- network ---------------------------------------------------------------------------


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        ip = ipaddress.ip_address(text.split("%", 1)[0])
    except ValueError:
        return None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def address_allowed(ip: ipaddress.IPv4Address | ipaddress.IPv6Address, allowed_hosts: Sequence[str] = ()) -> bool:
    for entry in allowed_hosts:
        try:
            if ip in ipaddress.ip_network(entry, strict=False):
                return True
        except ValueError:
            continue  # a host name: matched by name in check_url
    return ip.is_global and not ip.is_multicast


def host_allowed_by_name(host: str, allowed_hosts: Sequence[str]) -> bool:
    return host.lower().rstrip(".") in {h.lower().rstrip(".") for h in allowed_hosts}


def resolve_host(host: str, port: int | None) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port or 0, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, OSError) as exc:
        raise PolicyViolation("unresolvable_host", f"host {host!r} does not resolve ({exc})") from exc
    return sorted({i[4][0] for i in infos})


def check_url(url: str, policy: IngestPolicy) -> str:
    """``url`` if it may be fetched; raises :class:`PolicyViolation` otherwise."""
    text = url.strip()
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise PolicyViolation("unsupported_url", f"malformed URL ({exc})") from exc
    if parts.scheme.lower() not in URL_SCHEMES:
        shown = f"scheme {parts.scheme!r}" if parts.scheme else "no scheme"
        raise PolicyViolation("unsupported_url", f"{shown}: only http(s) URLs are fetched")
    host = (parts.hostname or "").lower().rstrip(".")
    if not host:
        raise PolicyViolation("unsupported_url", "URL has no host")
    if host_allowed_by_name(host, policy.allowed_hosts):
        return text
    if host in METADATA_HOSTS:
        raise PolicyViolation("address_not_allowed", f"host {host!r} is a metadata service")
    literal = _ip(host)
    addresses = [str(literal)] if literal is not None else resolve_host(host, port)
    for a in addresses:
        ip = _ip(a)
        if ip is None or not address_allowed(ip, policy.allowed_hosts):
            raise PolicyViolation(
                "address_not_allowed",
                f"host {host!r} resolves to {a}, a non-public address "
                "(allow it in the ingest resource's allowed_hosts)",
            )
    return text


# The audit hook: every connect() while a guard is active must reach an allowed address.
_GUARD: contextvars.ContextVar[_Guard | None] = contextvars.ContextVar("subtext_network_guard", default=None)
_HOOK_LOCK = threading.Lock()
_HOOK_INSTALLED = False


@dataclass
class _Guard:
    policy: IngestPolicy
    refused: list[str] = field(default_factory=list)


def _audit(event: str, args: tuple) -> None:
    if event != "socket.connect":
        return
    guard = _GUARD.get()
    if guard is None:
        return
    address = args[1] if len(args) > 1 else None
    if not isinstance(address, tuple) or not address or not isinstance(address[0], str):
        return  # AF_UNIX and friends: not the network
    ip = _ip(address[0])
    if ip is None or not address_allowed(ip, guard.policy.allowed_hosts):
        guard.refused.append(address[0])
        raise AddressRefused("address_not_allowed", f"connection to {address[0]} refused by the network policy")


def _install_hook() -> None:
    global _HOOK_INSTALLED
    with _HOOK_LOCK:
        if not _HOOK_INSTALLED:
            sys.addaudithook(_audit)
            _HOOK_INSTALLED = True


@contextlib.contextmanager
def network_guard(policy: IngestPolicy) -> Iterator[_Guard]:
    """Within the block (this thread / context), connections to refused addresses raise."""
    _install_hook()
    guard = _Guard(policy)
    token = _GUARD.set(guard)
    try:
        yield guard
    finally:
        _GUARD.reset(token)


def policy_from_settings(
    data_dir: str | os.PathLike[str] | None,
    allowed_roots: Sequence[str] = (),
    allowed_hosts: Sequence[str] = (),
    allowed_variables: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    **limits: object,
) -> IngestPolicy:
    """The pipeline's policy: the data dir plus configured roots; hosts / roots / variables
    from the resource and from ``SUBTEXT_ALLOWED_HOSTS`` / ``_ROOTS`` / ``_VARIABLES``
    (comma-separated; roots may also be ``os.pathsep``-separated) set by the operator."""
    env = os.environ if env is None else env

    def listed(name: str, seps: str = ",") -> list[str]:
        raw = env.get(name, "")
        for s in seps[1:]:
            raw = raw.replace(s, seps[0])
        return [x.strip() for x in raw.split(seps[0]) if x.strip()]

    roots = [*([str(data_dir)] if data_dir else []), *allowed_roots, *listed("SUBTEXT_ALLOWED_ROOTS", "," + os.pathsep)]
    base = IngestPolicy(
        roots=(),
        allowed_hosts=tuple(dict.fromkeys([*allowed_hosts, *listed("SUBTEXT_ALLOWED_HOSTS")])),
        allowed_variables=tuple(dict.fromkeys([*allowed_variables, *listed("SUBTEXT_ALLOWED_VARIABLES")])),
        **{k: v for k, v in limits.items() if v is not None},  # type: ignore[arg-type]
    )
    return base.with_roots(*roots)
