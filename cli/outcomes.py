"""What a failed piece of a build takes down with it, and nothing more.

Dagster skips, inside one run, only the steps downstream of a failed step or of a failed
blocking check. ``cli.build`` runs the graph as several runs (segments), so it applies the
same rule across them: after each run it records which assets failed (a failed step, or an
ERROR-severity blocking check), and a later segment drops exactly the assets that depend on
one of them. Everything independent still runs; the build exits non-zero and the summary says
what was skipped and why.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import dagster as dg


@dataclass
class Outcomes:
    """Failed assets with their reason, and the assets skipped because of each."""

    failed: dict[str, str] = field(default_factory=dict)  # asset → why
    skipped: dict[str, str] = field(default_factory=dict)  # asset → the failed asset it depends on

    @property
    def bad(self) -> set[str]:
        return set(self.failed) | set(self.skipped)

    def __bool__(self) -> bool:
        return bool(self.failed or self.skipped)

    def keep_runnable(self, graph, keys: Iterable[dg.AssetKey]) -> list[dg.AssetKey]:
        """``keys`` without those that depend (through any path) on a failed or skipped asset;
        the dropped ones are recorded as skipped, with the failed asset they wait for."""
        keys = list(keys)
        changed = True
        while changed:  # a key can depend on another key of the same segment
            changed = False
            for k in keys:
                name = k.to_user_string()
                if name in self.bad:
                    continue
                cause = self._cause(graph, k)
                if cause is not None:
                    self.skipped[name] = cause
                    changed = True
        return [k for k in keys if k.to_user_string() not in self.bad]

    def _cause(self, graph, key: dg.AssetKey) -> str | None:
        """The failed asset ``key`` waits for, through the failed or skipped parents (breadth-first)."""
        for parent in sorted(graph.get(key).parent_keys, key=lambda p: p.to_user_string()):
            p = parent.to_user_string()
            if p in self.failed:
                return p
            if p in self.skipped:
                return self.skipped[p]
        return None

    def record_run(self, graph, keys: Iterable[dg.AssetKey], result: dg.ExecuteInJobResult) -> None:
        """The assets of a finished run that failed: not materialized (their step failed, the
        run did not start, or an upstream step of the same run failed) or with a failed
        blocking check of severity ERROR (Dagster stops their descendants)."""
        made = {ev.asset_key for ev in result.get_asset_materialization_events()}
        errors = _step_errors(result)
        for ev in result.get_asset_check_evaluations():
            if not ev.passed and ev.severity == dg.AssetCheckSeverity.ERROR and _blocking(graph, ev):
                name = ev.asset_key.to_user_string()
                self.failed.setdefault(name, f"blocking check {ev.check_name} failed")
        missing = [k for k in keys if k not in made]
        for k in missing:
            node = graph.get(k).assets_def.node_def.name
            if node in errors:
                self.failed.setdefault(k.to_user_string(), f"step failed: {errors[node]}")
        succeeded = {ev.step_key.split("[")[0] for ev in result.get_step_success_events()}
        rest = [
            k  # a step that succeeded without output (nothing to do) is no failure
            for k in missing
            if k.to_user_string() not in self.failed and graph.get(k).assets_def.node_def.name not in succeeded
        ]
        changed = True
        while changed:  # not materialized without an error of its own: an upstream one failed
            changed = False
            for k in [k for k in rest if k.to_user_string() not in self.bad]:
                cause = self._cause(graph, k)
                if cause is not None:
                    self.skipped[k.to_user_string()] = cause
                    changed = True
        for k in rest:
            if k.to_user_string() not in self.bad:
                self.failed[k.to_user_string()] = "not materialized: the run failed (see the Dagster UI)"

    def lines(self, shown: int = 6) -> list[str]:
        """The summary: each failure, then what was skipped because of it."""
        if not self:
            return []
        out = ["", "Failed (everything that does not depend on these was still built):"]
        by_cause: dict[str, list[str]] = {}
        for name, cause in self.skipped.items():
            by_cause.setdefault(cause, []).append(name)
        for name, why in sorted(self.failed.items()):
            out.append(f"  - {name}: {why}")
            skipped = sorted(by_cause.get(name, []))
            if skipped:
                more = f" (+{len(skipped) - shown} more)" if len(skipped) > shown else ""
                out.append(f"      skipped, depends on it: {', '.join(skipped[:shown])}{more}")
        return out


def _blocking(graph, ev) -> bool:
    """Whether the evaluated check is blocking (from its spec; the evaluation carries it too)."""
    flag = getattr(ev, "blocking", None)
    if flag is not None:
        return bool(flag)
    spec = graph.get_check_spec(dg.AssetCheckKey(ev.asset_key, ev.check_name))
    return bool(getattr(spec, "blocking", False))


def _step_errors(result: dg.ExecuteInJobResult) -> dict[str, str]:
    """Failed step → the first line of its error (the op name, without a mapping index)."""
    out = {}
    for ev in result.get_step_failure_events():
        error = getattr(ev.event_specific_data, "error", None)
        while error is not None and error.cause is not None:  # the user code's error, not Dagster's wrapper
            error = error.cause
        message = (error.message if error is not None else "").strip().splitlines()
        out[ev.step_key.split("[")[0]] = (message[0] if message else "failed")[:300]
    return out
