"""Read an ``strace -f -y`` log: every socket contact that is not loopback, every name lookup, every
file written outside given folders. Used by test_offline_trace.py (tested in test_strace_log.py).

A log line is ``PID name(args) = result``; with ``-f`` a call can be split into
``PID name(args <unfinished ...>`` and ``PID <... name resumed>rest) = result``.
"""

from __future__ import annotations

import codecs
import ipaddress
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from posixpath import normpath

# strace flags for the network and the write side of the file system (-y: paths of fds).
TRACE_ARGS = [
    "-f",
    "-y",
    "-qq",
    "-s",
    "512",
    "-e",
    "trace=%network,execve,open,openat,creat,mkdir,mkdirat,rename,renameat,renameat2,"
    "link,linkat,symlink,symlinkat,truncate,unlink,unlinkat,rmdir",
]
# Sockets of local resolvers that answer host-name lookups (a lookup through them is a lookup).
RESOLVER_SOCKETS = ("/run/systemd/resolve/io.systemd.Resolve", "/run/systemd/resolve/io.systemd.Resolve.Monitor")
WRITE_FLAGS = re.compile(r"O_(WRONLY|RDWR|CREAT|TRUNC|APPEND)")
_LINE = re.compile(r"^(\d+)\s+(.*)$")
_CALL = re.compile(r"^([a-z0-9_]+)\((.*)$", re.S)
_RESULT = re.compile(r"\)\s+= ")
_RESUMED = re.compile(r"^<\.\.\. ([a-z0-9_]+) resumed>(.*)$", re.S)


@dataclass(frozen=True)
class Call:
    pid: int
    name: str
    args: str  # everything between the parentheses
    result: str  # "0", "3</path>", "-1 ENOENT (...)"

    @property
    def ok(self) -> bool:
        return not self.result.startswith("-1") and self.result != "?"


def calls(lines: Iterable[str]) -> Iterator[Call]:
    """The complete calls of a log, unfinished halves joined (signals, exits and noise skipped)."""
    pending: dict[int, tuple[str, str]] = {}
    for raw in lines:
        m = _LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        pid, rest = int(m.group(1)), m.group(2)
        resumed = _RESUMED.match(rest)
        if resumed:
            name, head = pending.pop(pid, (resumed.group(1), ""))
            text = head + resumed.group(2)
        elif rest.endswith("<unfinished ...>"):
            c = _CALL.match(rest)
            if c:
                pending[pid] = (c.group(1), c.group(2)[: -len("<unfinished ...>")].rstrip())
            continue
        else:
            c = _CALL.match(rest)
            if not c:
                continue
            name, text = c.group(1), c.group(2)
        ends = list(_RESULT.finditer(text))  # strace pads short calls to align the " = " column
        if ends:
            yield Call(pid, name, text[: ends[-1].start()], text[ends[-1].end() :].strip())


# -- network --------------------------------------------------------------------------------


def _sockaddrs(args: str) -> list[tuple[str, str, int | None]]:
    """(family, address, port) of each socket address written in ``args``."""
    out: list[tuple[str, str, int | None]] = []
    for m in re.finditer(r"\{sa_family=(AF_[A-Z0-9]+)(.*?)\}", args):
        family, body = m.group(1), m.group(2)
        port = re.search(r"sin6?_port=htons\((\d+)\)", body)
        if family == "AF_INET":
            addr = re.search(r'inet_addr\("([^"]+)"\)', body)
        elif family == "AF_INET6":
            addr = re.search(r'inet_pton\(AF_INET6, "([^"]+)"', body)
        elif family == "AF_UNIX":
            addr = re.search(r'sun_path=(?:@)?"([^"]*)"', body)
        else:
            continue
        out.append((family, addr.group(1) if addr else "?", int(port.group(1)) if port else None))
    return out


def is_loopback(address: str) -> bool:
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def dns_names(buffer: str) -> list[str]:
    """The question name of a DNS query in strace's escaped rendering of a send buffer ([] if the
    buffer is not a query: header with one question, then length-prefixed labels)."""
    try:
        data = codecs.decode(buffer, "unicode_escape").encode("latin-1")
    except (UnicodeDecodeError, UnicodeEncodeError, ValueError):
        return []
    if len(data) < 17 or data[2] & 0x80 or data[4:6] != b"\x00\x01":
        return []
    labels, i = [], 12  # the question follows the 12-byte header
    while i < len(data) and data[i]:
        n = data[i]
        label = data[i + 1 : i + 1 + n]
        if n > 63 or len(label) < n or not all(32 < b < 127 for b in label):
            return []
        labels.append(label.decode("ascii"))
        i += 1 + n
    return [".".join(labels)] if labels else []


def network_contacts(log: Iterable[Call]) -> list[str]:
    """Every contact with anything but loopback, and every name lookup, as one line each."""
    problems: list[str] = []
    dns_sockets: set[tuple[int, str]] = set()
    for c in log:
        if c.name not in ("connect", "sendto", "sendmsg", "sendmmsg"):
            continue
        fd = c.args.split(",", 1)[0].split("<", 1)[0]  # -y adds "<socket:[inode]>"
        if c.name == "connect":
            dns_sockets.discard((c.pid, fd))  # a reused descriptor
        for family, addr, port in _sockaddrs(c.args):
            if family == "AF_UNIX":
                if addr in RESOLVER_SOCKETS:
                    problems.append(f"pid {c.pid}: name lookup through {addr}")
                continue
            if port == 53:
                dns_sockets.add((c.pid, fd))
                problems.append(f"pid {c.pid}: DNS to {addr}:53")
            elif not is_loopback(addr):
                problems.append(f"pid {c.pid}: {c.name} to {addr}:{port}")
        if c.name != "connect" and ((c.pid, fd) in dns_sockets or "htons(53)" in c.args):
            for buf in re.findall(r'iov_base="((?:[^"\\]|\\.)*)"', c.args) or re.findall(
                r'^[^,]+, "((?:[^"\\]|\\.)*)"', c.args
            ):
                problems += [f"pid {c.pid}: looked up {name}" for name in dns_names(buf)]
    return problems


# -- file writes ----------------------------------------------------------------------------


# syscall -> (index of the directory fd or None, index of the path written)
_TARGET = {
    "open": (None, 0),
    "openat": (0, 1),
    "creat": (None, 0),
    "mkdir": (None, 0),
    "mkdirat": (0, 1),
    "rename": (None, 1),
    "renameat": (2, 3),
    "renameat2": (2, 3),
    "link": (None, 1),
    "linkat": (2, 3),
    "symlink": (None, 1),
    "symlinkat": (1, 2),
    "truncate": (None, 0),
    "unlink": (None, 0),
    "unlinkat": (0, 1),
    "rmdir": (None, 0),
}


def split_args(args: str) -> list[str]:
    """Top-level arguments: commas inside quotes, braces, brackets or parentheses do not split."""
    out, depth, quoted, cur, i = [], 0, False, [], 0
    while i < len(args):
        ch = args[i]
        if quoted:
            cur.append(ch)
            if ch == "\\" and i + 1 < len(args):
                cur.append(args[i + 1])
                i += 1
            elif ch == '"':
                quoted = False
        elif ch == '"':
            quoted = True
            cur.append(ch)
        elif ch in "{[(":
            depth += 1
            cur.append(ch)
        elif ch in "}])":
            depth -= 1
            cur.append(ch)
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
        i += 1
    if cur:
        out.append("".join(cur).strip())
    return out


def _unquote(arg: str) -> str | None:
    m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"(?:\.\.\.)?', arg)
    return codecs.decode(m.group(1), "unicode_escape") if m else None


def written_paths(log: Iterable[Call]) -> list[tuple[str, str]]:
    """(syscall, absolute path) of each successful write-side call; a relative path is joined to
    its directory fd (``-y`` shows the cwd on ``AT_FDCWD``), else kept as ``relative:<path>``."""
    out: list[tuple[str, str]] = []
    for c in log:
        spec = _TARGET.get(c.name)
        if spec is None or not c.ok:
            continue
        args = split_args(c.args)
        fd_at, path_at = spec
        if path_at >= len(args):
            continue
        if c.name in ("open", "openat") and not WRITE_FLAGS.search(
            args[path_at + 1] if len(args) > path_at + 1 else ""
        ):
            continue
        target = _unquote(args[path_at])
        if target is None:
            continue
        if not target.startswith("/"):
            m = re.fullmatch(r"(?:AT_FDCWD|\d+)<(.*)>", args[fd_at]) if fd_at is not None else None
            if not m:
                out.append((c.name, f"relative:{target}"))
                continue
            target = f"{m.group(1)}/{target}"
        out.append((c.name, normpath(target)))
    return out


def outside(paths: Iterable[tuple[str, str]], allowed: Iterable[str]) -> list[str]:
    """The written paths under none of the ``allowed`` prefixes (folders end with ``/``)."""
    roots = tuple(allowed)
    return sorted({f"{name} {p}" for name, p in paths if not any(p == r.rstrip("/") or p.startswith(r) for r in roots)})
