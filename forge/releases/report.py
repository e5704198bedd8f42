"""The import report of one release (docs/releases.md "Import report"): offered vs imported per
unit, each reject reason with its count and three examples, and the release's own statistics
next to the paper's table, as one markdown text (the ``<paper>_release`` materialization shows
it as ``<name>/report``)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from forge.releases.records import ParsedRelease, reject_examples


def _cell(v: Any) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.2f}" if abs(v) < 100 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return str(v).replace("|", "\\|").replace("\n", " ")


def markdown(parsed: ParsedRelease, title: str) -> str:
    lines = [f"### {title}", "", "| unit | offered | imported | not imported |", "|---|---:|---:|---:|"]
    for unit, n in parsed.units.items():
        lines.append(
            f"| {unit} | {_cell(n['offered'])} | {_cell(n['imported'])} | {_cell(n['offered'] - n['imported'])} |"
        )
    by_reason = Counter(r.reason for r in parsed.rejects)
    lines += ["", "| reject reason | count | examples (first three) |", "|---|---:|---|"]
    examples = reject_examples(parsed.rejects)
    for reason, n in by_reason.most_common():
        ex = "<br>".join(_cell(e[:160]) for e in examples[reason])
        lines.append(f"| {reason} | {n:,} | {ex} |")
    if not by_reason:
        lines.append("| (none) | 0 | |")
    if parsed.stats:
        lines += ["", "| figure | this release | paper |", "|---|---:|---:|"]
        lines += [f"| {k} | {_cell(a)} | {_cell(b)} |" for k, (a, b) in parsed.stats.items()]
    return "\n".join(lines) + "\n"
