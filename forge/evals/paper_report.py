"""A paper's own evaluation tables, rebuilt from ``eval_scores`` and set beside its published
figures (each paper's ``published.yaml``, docs/evals.md "Paper reports").

``published.yaml`` holds, per paper:

* ``tables``: each table of the paper this project reproduces: ``id``, ``title``, ``metric``
  (an ``eval_scores`` metric; a column may name its own), ``scale`` (100 when the paper prints
  percentages), ``decimals`` (the paper's rounding), ``columns`` (``name`` → ``setting``,
  ``slice``, optional ``metric``; ``settings: [...]`` instead of ``setting`` = the mean over
  those settings, as a paper's mean over prompts; optional ``n``: the item count the paper prints
  in that column's header) and, for tables whose rows are model × setting, ``row_settings``;
* ``published``: the paper's figures: ``table``, ``row`` (the paper's row label), ``column``,
  ``value``, optional ``setting`` (row setting) and ``model`` (the project's model that row is,
  e.g. ``human``; default: the row label itself).

Every model with a value in a table becomes a row; a cell the model was not evaluated on is
empty, never 0. A published figure sits beside the project's value of the same model, setting
and column, with the difference; a difference above half a unit of the paper's last printed
digit is flagged. A published figure whose model, setting or column the project does not have
is listed as not reproduced, with the reason.

The report opens with what it evaluated (``Evaluated``): the export version and its items, and
whether they are the paper's own published release (imported, docs/releases.md) or a set this
project built. A difference from a published figure is flagged only on the paper's own set: beside
a built set the figure is context, and a note gives both sizes (``items`` at the top of
``published.yaml``: the paper's evaluated set, where the paper states it).

Every cell shows its n (``eval_scores.n``: the items behind the value; a question of several
slices counts in each, ``EvalSpec.multi_label``); a column whose n differs from the paper's
header count for the same set is named under its table with both counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from forge.items.cells import as_object
from forge.storage.yaml_files import read_yaml

FLAG = "⚠"


@dataclass(frozen=True)
class Column:
    name: str
    setting: str | None  # None: the row's setting (tables with row_settings)
    slice: str = "all"
    metric: str | None = None
    settings: tuple[str, ...] = ()  # instead of `setting`: the mean over these (empty unless all were run)
    n: int | None = None  # the item count printed in the paper's column header (None: none printed)


@dataclass(frozen=True)
class TableSpec:
    id: str
    title: str
    metric: str
    columns: tuple[Column, ...]
    scale: float = 1.0
    decimals: int = 2
    row_settings: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class FigureSpec:
    id: str
    title: str
    table: str  # the table whose cells (ours) it draws
    kind: str = "bars"  # bars: one group per column, one bar per row; radar: one polygon per row
    exclude: tuple[str, ...] = ()  # columns of the table not drawn (e.g. an average)


@dataclass
class PaperTables:
    tables: tuple[TableSpec, ...]
    published: pd.DataFrame  # table, row, model, setting, column, value
    figures: tuple[FigureSpec, ...] = field(default_factory=tuple)
    items: int | None = None  # the paper's evaluated set (``items:`` of published.yaml; None: not stated)


@dataclass(frozen=True)
class Evaluated:
    """What the scores were computed on: export ``version`` (``v1``) of ``n_items`` items of ``split``,
    ``releases`` the published releases its items were imported from (``name version``), ``built`` the
    items this project built. The paper's own set: every item imported from a release."""

    version: str
    n_items: int
    split: str = "test"
    releases: tuple[str, ...] = ()
    built: int = 0

    @property
    def paper_own(self) -> bool:
        return bool(self.releases) and self.built == 0 and self.n_items > 0

    def describe(self) -> str:
        what = f"export {self.version} of {self.n_items:,} items ({self.split} split)"
        if self.paper_own:
            return f"the published release {', '.join(self.releases)}: {what}"
        if self.releases:
            return f"{what}: {self.built:,} built here, the rest imported from {', '.join(self.releases)}"
        return f"{what}, built by this project"


def evaluated_of(items: pd.DataFrame, version: str, split: str = "test") -> Evaluated:
    """``Evaluated`` of one export version's rows over ``split``: an item with ``origin`` imported
    (a column, or folded into ``extra`` as gated items and exports hold it) came from the release its
    ``release`` / ``release_version`` name; anything else was built here."""
    rows = items[items["split"] == split] if split != "all" and "split" in items and len(items) else items
    names, imported = set(), 0
    for r in rows.to_dict("records"):
        d = {**as_object(r.get("extra")), **{k: r[k] for k in ("origin", "release", "release_version") if k in r}}
        if d.get("origin") != "imported":
            continue
        imported += 1
        v = d.get("release_version")
        names.add(f"`{d.get('release')}`" + (f" (version {v})" if v not in (None, "") and not _nan(v) else ""))
    return Evaluated(version, len(rows), split, tuple(sorted(names)), len(rows) - imported)


def load_published(path: Path) -> PaperTables:
    """Read and check a ``published.yaml``: a figure naming a table or column that the file does
    not define is an error (a typo must not become a silent "not reproduced")."""
    raw = read_yaml(path) or {}
    tables = []
    for t in raw.get("tables") or []:
        cols = tuple(
            Column(
                str(c["name"]),
                c.get("setting"),
                str(c.get("slice", "all")),
                c.get("metric"),
                tuple(c.get("settings") or ()),
                int(c["n"]) if c.get("n") is not None else None,
            )
            for c in t["columns"]
        )
        tables.append(
            TableSpec(
                str(t["id"]),
                str(t["title"]),
                str(t["metric"]),
                cols,
                float(t.get("scale", 1.0)),
                int(t.get("decimals", 2)),
                tuple(t.get("row_settings") or ()),
                str(t.get("note") or ""),
            )
        )
    by_id = {t.id: t for t in tables}
    rows = []
    for k, p in enumerate(raw.get("published") or []):
        t = by_id.get(str(p.get("table")))
        if t is None:
            raise ValueError(f"{path}: published[{k}] names table {p.get('table')!r}, not one of {sorted(by_id)}")
        if str(p["column"]) not in {c.name for c in t.columns}:
            raise ValueError(f"{path}: published[{k}] names column {p['column']!r}, not a column of {t.id}")
        rows.append(
            {
                "table": t.id,
                "row": str(p["row"]),
                "model": str(p.get("model") or p["row"]),
                "setting": p.get("setting"),
                "column": str(p["column"]),
                "value": float(p["value"]),
            }
        )
    published = pd.DataFrame(rows, columns=load_published_empty().columns)
    figures = []
    for f in raw.get("figures") or []:
        if str(f["table"]) not in by_id or f.get("kind", "bars") not in ("bars", "radar"):
            raise ValueError(f"{path}: figure {f.get('id')!r} needs a table of this file and kind bars or radar")
        figures.append(
            FigureSpec(
                str(f["id"]),
                str(f["title"]),
                str(f["table"]),
                str(f.get("kind", "bars")),
                tuple(str(c) for c in f.get("exclude") or ()),
            )
        )
    items = raw.get("items")
    return PaperTables(tuple(tables), published, tuple(figures), int(items) if items is not None else None)


def load_published_empty() -> pd.DataFrame:
    """The published figures of a paper without a ``published.yaml``: none."""
    return pd.DataFrame(columns=["table", "row", "model", "setting", "column", "value"])


def _same_model(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


def table_cells(
    spec: TableSpec, scores: pd.DataFrame, published: pd.DataFrame, known_settings: set[str]
) -> pd.DataFrame:
    """One row per (model, row setting, column): ``ours`` (scaled, unrounded; NaN when the model
    was not evaluated there), ``n`` (items behind it; a mean over settings of unequal n: "a/b"),
    ``paper_n`` (the paper's header count), ``paper``, ``diff`` = ours − paper, ``flag``; plus the
    published figures nobody here reproduces, with ``reason``."""
    pub = published[published["table"] == spec.id]
    row_settings = spec.row_settings or (None,)
    cells: list[dict[str, Any]] = []
    by_key: dict[tuple[str, str | None, str, str], float] = {}
    n_by: dict[tuple[str, str | None, str, str], Any] = {}
    has_n = "n" in scores
    for r in scores.itertuples():
        by_key[(str(r.model), str(r.setting), str(r.metric), str(r.slice))] = r.value
        n_by[(str(r.model), str(r.setting), str(r.metric), str(r.slice))] = r.n if has_n else None
    models = sorted({str(m) for m in scores["model"]}) if len(scores) else []
    for model in models:
        for rs in row_settings:
            row = []
            for c in spec.columns:
                if c.settings:  # e.g. a mean over prompts: every one must have a value
                    keys = [(model, s, c.metric or spec.metric, c.slice) for s in c.settings]
                    vs = [by_key.get(k) for k in keys]
                    ok = all(v is not None and not _nan(v) for v in vs)
                    v = float(np.mean([float(x) for x in vs])) if ok else None
                else:
                    setting = c.setting if c.setting is not None else rs
                    keys = [(model, str(setting), c.metric or spec.metric, c.slice)]
                    v = by_key.get(keys[0])
                ours = float(v) * spec.scale if v is not None and not _nan(v) else math.nan
                n = _cell_n([n_by.get(k) for k in keys]) if not math.isnan(ours) else None
                row.append({"model": model, "setting": rs, "column": c.name, "ours": ours, "n": n, "paper_n": c.n})
            if any(not math.isnan(x["ours"]) for x in row):  # a model with nothing in this table is no row
                cells += row
    frame = pd.DataFrame(cells, columns=["model", "setting", "column", "ours", "n", "paper_n"])
    half_unit = 0.5 * 10 ** (-spec.decimals) + 1e-9
    out = []
    for x in frame.to_dict("records"):
        mask = [
            _same_model(str(m), x["model"]) and c == x["column"] and (s is None or _nan(s) or s == x["setting"])
            for m, c, s in zip(pub["model"], pub["column"], pub["setting"], strict=True)
        ]
        hit = pub[np.array(mask, dtype=bool)] if len(pub) else pub
        paper = float(hit["value"].iloc[0]) if len(hit) else math.nan
        diff = x["ours"] - paper
        out.append(
            {
                **x,
                "row": hit["row"].iloc[0] if len(hit) else None,
                "paper": paper,
                "diff": diff,
                "flag": bool(not math.isnan(diff) and abs(diff) > half_unit),
                "reason": None,
            }
        )
    matched = {(o["row"], o["setting"], o["column"]) for o in out if o["row"] is not None and not math.isnan(o["ours"])}
    for p in pub.to_dict("records"):
        setting = None if p["setting"] is None or _nan(p["setting"]) else p["setting"]
        if (p["row"], setting, p["column"]) in matched:
            continue
        out.append(
            {
                "model": p["model"],
                "setting": setting,
                "column": p["column"],
                "ours": math.nan,
                "n": None,
                "paper_n": next((c.n for c in spec.columns if c.name == p["column"]), None),
                "row": p["row"],
                "paper": p["value"],
                "diff": math.nan,
                "flag": False,
                "reason": _why_not(spec, p, setting, models, known_settings, frame),
            }
        )
    cols = ["model", "setting", "column", "ours", "n", "paper_n", "row", "paper", "diff", "flag", "reason"]
    return pd.DataFrame(out, columns=cols)


def _nan(v: Any) -> bool:
    return isinstance(v, float) and math.isnan(v)


def _cell_n(ns: list[Any]) -> int | str | None:
    """The n of a cell: its row's ``n``; for a mean over settings, the one n they share, else
    each setting's joined with "/" (None: the scores carry no n)."""
    got = [int(x) for x in ns if x is not None and not _nan(x)]
    if len(got) < len(ns) or not got:
        return None
    return got[0] if len(set(got)) == 1 else "/".join(str(x) for x in got)


def n_text(v: Any) -> str | None:
    """A cell's n as printed ("291", or "291/290" for a mean over settings); None when it has none
    (a column of ints with gaps comes back from pandas as floats)."""
    if v is None or _nan(v):
        return None
    return str(int(v)) if isinstance(v, (int, float, np.integer, np.floating)) else str(v)


def n_differences(spec: TableSpec, cells: pd.DataFrame) -> list[str]:
    """One line per column whose n here differs from the paper's header count, with both."""
    lines = []
    ours = cells[cells["reason"].isna()] if len(cells) else cells
    for c in spec.columns:
        if c.n is None or not len(ours):
            continue
        got = {n_text(x) for x in ours.loc[ours["column"] == c.name, "n"]} - {None}
        differ = sorted(x for x in got if x != str(c.n))
        if differ:
            lines.append(f"- {c.name}: n = {', '.join(differ)} here, {c.n} in the paper's header")
    return lines


def _why_not(spec: TableSpec, p: dict[str, Any], setting: str | None, models: list[str], known: set[str], frame) -> str:
    col = next(c for c in spec.columns if c.name == p["column"])
    want = col.setting if col.setting is not None else setting
    missing = [s for s in (col.settings or ((want,) if want is not None else ())) if s not in known]
    if missing:
        return f"setting `{'`, `'.join(missing)}` is not run by this project"
    want = want if not col.settings else " + ".join(col.settings)
    if not any(_same_model(m, p["model"]) for m in models):
        return f"model `{p['model']}` was not evaluated here"
    return f"model `{p['model']}` was not evaluated on `{want}` / `{col.slice}`"


def _fmt(v: float, decimals: int) -> str:
    return "" if math.isnan(v) else f"{v:.{decimals}f}"


def render_table(spec: TableSpec, cells: pd.DataFrame) -> str:
    """Markdown: the paper's columns; our rows (``paper …, Δ …`` beside a published figure, ⚠
    beyond the rounding), then the paper's rows not reproduced here (†)."""
    cols = [c.name for c in spec.columns]
    heads = [f"{c.name} (paper n={c.n})" if c.n is not None else c.name for c in spec.columns]
    lead = ["model", "setting"] if spec.row_settings else ["model"]
    lines = [f"**{spec.title}**", "", "| " + " | ".join(lead + heads) + " |", "|" + "---|" * (len(lead) + len(cols))]
    ours = cells[cells["reason"].isna()] if len(cells) else cells
    for (model, setting), g in ours.groupby(["model", "setting"], sort=False, dropna=False):
        by_col = {r["column"]: r for r in g.to_dict("records")}
        out = []
        for c in cols:
            r = by_col.get(c)
            if r is None:
                out.append("")
                continue
            s = _fmt(r["ours"], spec.decimals)
            if not math.isnan(r["paper"]) and s:
                sign = "+" if r["diff"] >= 0 else "−"
                s += f" (paper {_fmt(r['paper'], spec.decimals)}, Δ {sign}{abs(r['diff']):.{spec.decimals}f}"
                s += f" {FLAG})" if r["flag"] else ")"
            if s and n_text(r.get("n")) is not None:
                s += f" · n={n_text(r['n'])}"  # the items behind the value
            out.append(s)
        head = [str(model)] + ([str(setting)] if spec.row_settings else [])
        lines.append("| " + " | ".join(head + out) + " |")
    theirs = cells[cells["reason"].notna()] if len(cells) else cells
    for (row, setting), g in theirs.groupby(["row", "setting"], sort=False, dropna=False):
        by_col = {r["column"]: r for r in g.to_dict("records")}
        vals = [_fmt(by_col[c]["paper"], spec.decimals) if c in by_col else "" for c in cols]
        head = [f"{row} †"] + ([str(setting) if isinstance(setting, str) else ""] if spec.row_settings else [])
        lines.append("| " + " | ".join(head + vals) + " |")
    if len(theirs):
        lines += ["", "† published, not reproduced here:"]
        for (row, reason), _ in theirs.groupby(["row", "reason"], sort=False):
            lines.append(f"- {row}: {reason}")
    differ = n_differences(spec, cells)
    if differ:
        lines += ["", "n differs from the paper's header count (the paper's figure rests on another set):", *differ]
    if spec.note:
        lines += ["", spec.note]
    return "\n".join(lines)


def evaluated_lines(evaluated: list[Evaluated], paper_items: int | None) -> list[str]:
    """The report's opening: what was evaluated, and, beside a built set, both sizes."""
    if not evaluated:
        return ["Evaluated: no export named by the scores (differences are not flagged).", ""]
    out = [f"Evaluated: {e.describe()}." for e in evaluated]
    if not all(e.paper_own for e in evaluated):
        theirs = f"{paper_items:,} items" if paper_items else "a size published.yaml does not state"
        ours = ", ".join(f"{e.n_items:,}" for e in evaluated)
        out.append(
            f"The published figures rest on the paper's own set ({theirs}); this set has {ours} items and is "
            "not the paper's: they are shown for context and differences are not flagged."
        )
    return [*out, ""]


def paper_report(
    title: str,
    paper: PaperTables,
    scores: pd.DataFrame,
    known_settings: set[str],
    evaluated: list[Evaluated] | None = None,
) -> tuple[str, dict[str, pd.DataFrame]]:
    """(Markdown of every table, in the file's order, and each table's cells). ``evaluated``: what
    the scores were computed on (one per export version they name); a difference is flagged only
    when every one is the paper's own release (None: not said, flagged as before)."""
    parts = [f"# {title}: the paper's tables from this catalog", ""]
    own = True
    if evaluated is not None:
        parts += evaluated_lines(evaluated, paper.items)
        own = bool(evaluated) and all(e.paper_own for e in evaluated)
    if "backend" in scores and (scores["backend"] == "stub").any():
        # the offline stub's replies are placeholders: its row stays, named for what it is
        stub = (scores["backend"] == "stub").to_numpy()
        scores = scores.assign(model=[f"{m} ⚠stub" if s else m for m, s in zip(scores["model"], stub, strict=True)])
        parts += ["⚠stub: rows of the offline stub model; their scores are meaningless.", ""]
    all_cells = {}
    for spec in paper.tables:
        cells = table_cells(spec, scores, paper.published, known_settings)
        if not own and len(cells):  # a built set is not the paper's: its differences are context
            cells = cells.assign(flag=False)
        all_cells[spec.id] = cells
        parts += [render_table(spec, cells), ""]
        flagged = int(cells["flag"].sum()) if len(cells) else 0
        if flagged:
            parts += [f"{FLAG} {flagged} cell(s) differ from the paper by more than its rounding.", ""]
    return "\n".join(parts), all_cells


def figure_png(fig: FigureSpec, cells: pd.DataFrame, path: Path) -> Path | None:
    """Draw a figure from its table's cells (this catalog's values; empty cells left out).
    None when the table has no value to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ours = cells[cells["reason"].isna() & cells["ours"].notna()] if len(cells) else cells
    ours = ours[~ours["column"].isin(fig.exclude)] if len(ours) else ours
    if ours.empty:
        return None
    who = [f"{m} / {s}" if isinstance(s, str) else str(m) for m, s in zip(ours["model"], ours["setting"], strict=True)]
    piv = ours.assign(who=who).pivot_table(index="who", columns="column", values="ours", sort=False)
    cols = list(dict.fromkeys(ours["column"]))
    piv = piv.reindex(columns=cols)
    if fig.kind == "radar":
        angles = np.linspace(0, 2 * np.pi, len(cols), endpoint=False)
        f = plt.figure(figsize=(5.5, 5))
        ax = f.add_subplot(projection="polar")
        for name, row in piv.iterrows():
            vals = np.nan_to_num(row.to_numpy(dtype=float))
            ax.plot(np.append(angles, angles[0]), np.append(vals, vals[0]), label=str(name))
        ax.set_xticks(angles, cols, fontsize=7)
    else:
        f, ax = plt.subplots(figsize=(max(5.0, 0.5 * len(cols) * max(1, len(piv)) ** 0.5 + 2), 3.5))
        width = 0.8 / max(1, len(piv))
        for k, (name, row) in enumerate(piv.iterrows()):
            ax.bar(np.arange(len(cols)) + k * width, row.to_numpy(dtype=float), width, label=str(name))
        ax.set_xticks(np.arange(len(cols)) + 0.4 - width / 2, cols, rotation=30, ha="right", fontsize=7)
    ax.set_title(fig.title, fontsize=9)
    ax.legend(fontsize=6, loc="best")
    f.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    f.savefig(path, dpi=80)
    plt.close(f)
    return path


def draw_figures(paper: PaperTables, cells: dict[str, pd.DataFrame], out_dir: Path) -> tuple[str, list[Path]]:
    """Markdown lines and PNG paths of every figure of ``paper`` (a figure without values says so)."""
    lines, paths = [], []
    for fig in paper.figures:
        p = figure_png(fig, cells.get(fig.table, pd.DataFrame()), out_dir / f"{fig.id}.png")
        lines.append(f"- **{fig.title}**: " + (f"`{p.name}`" if p else "_no value to draw yet_"))
        if p:
            paths.append(p)
    return "\n".join(lines), paths
