"""The open() guard of the Ray bucket check (scripts/ray_bucket_check.py), imported as
``sitecustomize`` by every Python process of a Ray node that the check starts with this folder
on ``PYTHONPATH`` (the raylet's workers inherit it).

``SUBTEXT_GUARD_PATHS`` (a JSON list) names the directories a process on this node must never
open: the local data dir, the driver's work dir, the other nodes' work dirs. An audit hook on
``open`` appends each such open to ``SUBTEXT_GUARD_REPORT/opened-<pid>.txt``; each process also
leaves ``installed-<pid>.txt`` (its argv), so the check can show the hook ran in the Ray workers
that did the work and not only that nothing was reported. Test tooling only: the project never
imports it.
"""

import json
import os
import sys


def _install() -> None:
    report = os.environ.get("SUBTEXT_GUARD_REPORT", "")
    guarded = [os.path.abspath(p) for p in json.loads(os.environ.get("SUBTEXT_GUARD_PATHS", "[]") or "[]")]
    if not report or not guarded:
        return
    pid = os.getpid()
    with open(os.path.join(report, f"installed-{pid}.txt"), "w") as f:
        f.write(" ".join(sys.argv))
    busy = [False]  # the hook's own write opens a file too

    def audit(event: str, args: tuple) -> None:
        if event != "open" or busy[0] or not isinstance(args[0], (str, bytes, os.PathLike)):
            return
        path = os.path.abspath(os.fsdecode(args[0]))
        if any(path == g or path.startswith(g + os.sep) for g in guarded):
            busy[0] = True
            try:
                with open(os.path.join(report, f"opened-{os.getpid()}.txt"), "a") as f:
                    f.write(path + "\n")
            finally:
                busy[0] = False

    sys.addaudithook(audit)


_install()
