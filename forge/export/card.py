"""The dataset card (README.md of an export): statistics, plots, provenance, construction.

Statistics follow the papers' tables: counts per category and split, an overall block
(totals, split sizes), average question / option / explanation lengths in words, and the distribution of every label the recipe recorded. Plots are PNGs drawn with
matplotlib's Agg backend. Licences are listed as found in the source metadata, with
"unknown" where a source did not say: the card never states one blanket licence.
"""

from __future__ import annotations

import base64
import json
import math
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from forge.benchmarks.spec import PaperCard
from forge.checks import mcq
from forge.export.hub import GENERAL_LIMITATIONS, USES
from forge.items.cells import as_object
from forge.items.outcome import md_table
from forge.models.weights import weights_summary_lines
from forge.review.card import card_lines

HUMAN_REVIEWED = "> Human-reviewed:"  # the first-lines notice of an export every reviewed item of which people accepted


def is_human_reviewed(card_text: str) -> bool:
    """Whether a written card says its export is human-reviewed (``forge.review.card.card_lines``'
    notice in its first lines); an unreviewed one says "Not human-reviewed", a policy ``off`` nothing."""
    return any(line.startswith(HUMAN_REVIEWED) for line in card_text.splitlines()[:30])


def _words(s: Any) -> int:
    return 0 if s is None or s is pd.NA or (isinstance(s, float) and math.isnan(s)) else len(str(s).split())


def _mean(xs: list[float]) -> float:
    return round(sum(xs) / len(xs), 1) if xs else 0.0


def explanation_of(row: Any) -> str | None:
    lab = as_object(row["labels"])
    for k in ("explanation", "rationale", "reasoning"):
        if isinstance(lab.get(k), str):
            return lab[k]
    ex = as_object(row.get("extra") if hasattr(row, "get") else None)
    return ex.get("explanation") if isinstance(ex.get("explanation"), str) else None


def overall_stats(df: pd.DataFrame) -> dict[str, Any]:
    """Overall block of a dataset card: totals, split sizes, average lengths (words)."""
    opts = [o for lst in df["options"] for o in (lst or [])]
    expl = [e for e in (explanation_of(r) for _, r in df.iterrows()) if e]
    refs = [x for lst in df["references"] for x in (lst or [])]
    split_counts = df["split"].value_counts().to_dict()
    return {
        "items": len(df),
        "splits": split_counts,
        "tasks": df["task"].value_counts().to_dict(),
        "categories": int(df["category"].nunique()),
        "source items": int(df["source_item_id"].nunique()),
        "images / frames": int(len({p for lst in df["media_paths"] for p in (lst or [])})),
        "avg question length (words)": _mean([_words(q) for q in df["question"]]),
        "avg option length (words)": _mean([_words(o) for o in opts]),
        "avg options per item": _mean([len(o) for o in df["options"] if o]),
        "avg explanation length (words)": _mean([_words(e) for e in expl]) if expl else None,
        "avg reference length (words)": _mean([_words(r) for r in refs]) if refs else None,
    }


def _is_id_key(key: str) -> bool:
    k = key.lower()
    return k == "id" or k.endswith(("_id", "_ids", "_hash", "_key", "_url", "_path"))


def label_distributions(df: pd.DataFrame, top: int = 12) -> dict[str, dict[str, int]]:
    """Counts of every scalar (or list-of-scalars) label the recipe stored in ``labels``.

    Identifiers are not labels: keys named like one (``*_id``, ``*_hash``, ...) and keys whose
    every value is distinct (more than ``top`` of them) are left out."""
    counts: dict[str, Counter] = {}
    for v in df["labels"]:
        for k, x in as_object(v).items():
            if k in ("explanation", "rationale", "reasoning") or _is_id_key(k):
                continue
            vals = x if isinstance(x, list) else [x]
            for y in vals:
                if isinstance(y, (str, bool, int)) and len(str(y)) <= 60:
                    counts.setdefault(k, Counter())[str(y)] += 1
    return {
        k: dict(c.most_common(top))
        for k, c in sorted(counts.items())
        if not (len(c) > top and len(c) == sum(c.values()))  # all distinct: an identifier, not a label
    }


def category_table(df: pd.DataFrame, split_order: list[str]) -> pd.DataFrame:
    t = pd.crosstab(df["category"].fillna("(none)"), df["split"])
    t = t.reindex(columns=[s for s in split_order if s in t.columns])
    t["total"] = t.sum(axis=1)
    t = t.sort_values("total", ascending=False)
    t.loc["total"] = t.sum()
    t.index.name = "category"
    return t


def position_table(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for split, g in df.groupby("split", sort=True):
        c: Counter = Counter()
        for a, o in zip(g["answer"], g["options"]):
            if o and isinstance(a, str) and len(a.strip()) == 1:
                try:
                    c[mcq.letter(mcq.letter_index(a))] += 1
                except ValueError:
                    pass
        if c:
            rows.append({"split": split, **dict(sorted(c.items()))})
    out = pd.DataFrame(rows).set_index("split").fillna(0).astype(int) if rows else pd.DataFrame()
    return out


def draw_plots(df: pd.DataFrame, out_dir: Path, split_order: list[str]) -> list[str]:
    """category_distribution.png and answer_positions.png; returns the file names written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    cat = category_table(df, split_order).drop(index="total", errors="ignore").drop(columns="total", errors="ignore")
    if not cat.empty:
        fig, ax = plt.subplots(figsize=(max(6, 0.5 * len(cat) + 3), 4))
        cat.plot.bar(stacked=True, ax=ax)
        ax.set_ylabel("items")
        ax.set_title("Items per category and split")
        fig.tight_layout()
        fig.savefig(out_dir / "category_distribution.png", dpi=100)
        plt.close(fig)
        written.append("category_distribution.png")
    pos = position_table(df)
    if not pos.empty:
        fig, ax = plt.subplots(figsize=(6, 4))
        pos.T.plot.bar(ax=ax)
        ax.set_xlabel("correct option")
        ax.set_ylabel("items")
        ax.set_title("Correct-option position per split")
        fig.tight_layout()
        fig.savefig(out_dir / "answer_positions.png", dpi=100)
        plt.close(fig)
        written.append("answer_positions.png")
    return written


def license_summary(prov: pd.DataFrame) -> pd.DataFrame:
    """Items and source items per licence as found (``unknown`` where none was recorded)."""
    if prov.empty:
        return pd.DataFrame()
    p = prov.copy()
    p["license"] = p["license"].map(lambda v: v if isinstance(v, str) and v.strip() else "unknown")
    t = p.groupby("license").agg(
        items=("item_id", "nunique"),
        source_items=("source_item_id", "nunique"),
        sources=("source", lambda s: ", ".join(sorted({str(x) for x in s if x}))),
    )
    t.index.name = "license"
    return t.sort_values("items", ascending=False)


def front_matter(
    benchmark: str, version: str, splits: list[str], licenses: list[str], hub: dict[str, Any] | None = None
) -> str:
    """YAML header the Hub and ``datasets.load_dataset`` read: licence, languages, task and size
    categories, typed features (``hub``: forge/export/hub.py), configs and data files."""
    known = sorted({lic for lic in licenses if lic != "unknown"})
    hub = hub or {}
    doc: dict[str, Any] = {
        "pretty_name": f"Subtext Forge {benchmark} ({version})",
        # One licence per source item, listed in LICENSE.md and the card; the Hub needs a name and a link.
        "license": "other",
        "license_name": "per-item-source-licences",
        "license_link": "LICENSE.md",
        "license_details": "per item, see provenance.jsonl and the Licences section"
        + (f" (found: {', '.join(known)}" if known else " (none recorded")
        + ("; some unknown)" if "unknown" in licenses and known else ")"),
    }
    if hub:
        doc["language"] = hub["languages"]
        doc["task_categories"] = hub["task_categories"]
        doc["size_categories"] = [hub["size_category"]]
        doc["tags"] = ["subtext-forge", benchmark, "implicit-meaning", "synthetic"]
    doc |= {
        "configs": [
            {
                "config_name": "default",
                "default": True,
                "data_files": [{"split": s, "path": f"data/{s}/**"} for s in splits],
                # the typed copy of metadata.jsonl (one schema for every split)
                "metadata_filenames": ["metadata.parquet"],
            },
        ],
    }
    if hub.get("features"):  # what `datasets` builds, typed (labels / extra as structs)
        doc["dataset_info"] = {"features": hub["features"]}
    return "---\n" + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True) + "---\n"


def render_card(ctx: dict[str, Any]) -> str:
    """The README body from the pieces ``forge.export.write`` gathered."""
    df: pd.DataFrame = ctx["items"]
    b, v = ctx["benchmark"], ctx["version"]
    path = ctx["path_hint"].replace("<version>", v)  # the loading snippet names this very version
    hub = ctx.get("hub") or {}
    lines = [front_matter(b, v, ctx["split_order"], ctx["licenses"], hub), f"# {b} — Subtext Forge export {v}", ""]
    if ctx.get("forced_stub"):
        lines += [
            "> **WARNING — FORCED STUB EXPORT.** "
            f"{ctx['stub_items']} item(s) were generated by the offline `stub` LLM backend (schema-valid "
            "placeholders, not real data). This export exists only because `force_stub` was set; "
            "do not publish or evaluate on it.",
            "",
        ]
    review_top, review_section = card_lines(ctx.get("review") or {}, ctx.get("cost"))  # "not human-reviewed" up front
    lines += review_top
    lines += [
        f"Content hash `{ctx['content_hash']}`, built {ctx['created_at']}. "
        f"{len(df)} items; built by the `{b}_splits → {b}_gated → {b}_export` assets.",
        "",
    ]
    lines += [
        "## Loading",
        "",
        "```python",
        "from datasets import load_dataset",
        f'ds = load_dataset("{path}")            # images decoded, labels / extra as typed structs',
        "# the same rows as a plain table (one builder per folder, so Parquet is loaded explicitly):",
        f'tab = load_dataset("parquet", data_files={{"test": "{path}/parquet/test.parquet"}})',
        "```",
        "",
        "Files: `data/<split>/metadata.parquet` (what `load_dataset` reads: typed, one schema in every split; "
        "`metadata.jsonl` is the same rows as JSON) + `data/<split>/media/*` (`file_names` are relative to "
        "the split folder), `LICENSE.md` (licences per source), `parquet/<split>.parquet` (same rows; `file_names` relative to this folder), "
        "`provenance.jsonl` (item → source, url, uploader, licence), `manifest.json` (hashes of every file).",
        "",
    ]
    lines += hub_intro(b, ctx.get("title"), hub, ctx.get("paper"))
    ov = overall_stats(df)
    lines += ["## Statistics", "", "| statistic | value |", "|---|---|"]
    for k, val in ov.items():
        if val is None:
            continue
        if isinstance(val, dict):
            val = ", ".join(f"{kk}: {vv}" for kk, vv in val.items())
        lines.append(f"| {k} | {val} |")
    lines += ["", "### Items per category and split", "", md_table(category_table(df, ctx["split_order"])), ""]
    for name in ctx.get("plots", []):
        lines += [f"![{name}](plots/{name})", ""]
    pos = position_table(df)
    if not pos.empty:
        pos.index.name = "split"
        lines += ["### Correct-option position", "", md_table(pos), ""]
    labels = label_distributions(df)
    if labels:
        lines += ["### Label distributions", ""]
        for k, c in labels.items():
            lines.append(f"- **{k}**: " + ", ".join(f"{x} ({n})" for x, n in c.items()))
        lines.append("")
    failed = ctx.get("failed_gates") or []
    if failed:  # stated up front: a reader must not miss a gate this export did not pass
        lines[3:3] = ["> **Failed quality gates:** " + "; ".join(failed) + ".", ""]
    g = ctx.get("gates", {})
    if g:
        lines += ["## Quality gates", "", "| gate | figure |", "|---|---|"]
        for k, val in g.items():
            lines.append(f"| {k} | {json.dumps(val) if isinstance(val, (dict, list)) else val} |")
        lines.append("")
    lines += review_section
    lines += [
        "## Licences and provenance",
        "",
        "Licences as recorded by the sources (yt-dlp metadata, source tables); `unknown` means the source "
        "did not state one — check before redistributing those items. No blanket licence applies.",
        "",
        md_table(ctx["license_table"]),
        "",
    ]
    lines += [
        "## Construction",
        "",
        f"- backends: {ctx['backends']}",
        f"- models: {ctx['models']}",
        f"- weights (config/weights.yaml): {'; '.join(ctx.get('weights') or weights_summary_lines())}",
        f"- item prompt hashes: {', '.join(ctx['prompt_hashes']) or 'none'}",
        f"- blind-solver prompt hash: {ctx.get('blind_prompt_hash', '')}; model: {ctx.get('blind_model', '')}",
        f"- recipe config (`{ctx.get('recipe_config_name') or 'none'}`, sha256 {ctx['recipe_config_hash']}):",
        "",
        "```yaml",
        ctx["recipe_config"].rstrip(),
        "```",
        "",
        "- recipe settings profile(s) that made the items (`paper` = the file's top level, the paper's "
        "settings): "
        + (
            ", ".join(
                f"`{p}`" + (f" (effective settings sha256 {h})" if h else "")
                for p, h in (ctx.get("recipe_profiles") or {}).items()
            )
            or "unrecorded"
        ),
        "",
        "- split / gate / export config:",
        "",
        "```yaml",
        yaml.safe_dump(ctx["stage_config"], sort_keys=False).rstrip(),
        "```",
        "",
    ]
    c = ctx["cost"]
    if c.get("calls") and not c.get("billed_calls"):
        lines += [
            "## Cost",
            "",
            f"$0 — estimated, nothing billed: all {c['calls']} LLM calls ran on the offline `stub` backend "
            f"(token counts estimated: {c['tokens_in']} in, {c['tokens_out']} out).",
            "",
        ]
    else:
        lines += [
            "## Cost",
            "",
            f"LLM spend for this benchmark's stages (every call, including rejected and regenerated attempts, "
            f"and the blind-solvability gate): ${c['cost_usd']:.4f} over {c['calls']} calls "
            f"({c['tokens_in']} tokens in, {c['tokens_out']} out, {c['cache_hits']} cache hits) → "
            f"**${c['per_item']:.5f} per accepted item** ({len(df)} items)."
            + (f" Unpriced models (cost 0 here): {c['unpriced']}." if c.get("unpriced") else ""),
            "",
        ]
    for section in ctx.get("extra_sections") or []:  # the benchmark spec's own card sections
        lines += [section.rstrip(), ""]
    lines += hub_outro(b, ctx.get("title"), ctx.get("paper"))
    ch = ctx.get("changes")
    lines += ["## Changes", ""]
    if ch and ch.get("previous"):
        lines += [
            f"Since {ch['previous']}: {ch['added']} added, {ch['removed']} removed, {ch['changed']} changed, "
            f"{ch['unchanged']} unchanged.",
            "",
        ]
        for key in ("added_ids", "removed_ids"):
            if ch.get(key):
                lines.append(f"- {key.split('_')[0]}: " + ", ".join(ch[key][:20]) + (" …" if len(ch[key]) > 20 else ""))
        lines.append("")
    else:
        lines += ["First version.", ""]
    return "\n".join(lines)


def hub_intro(benchmark: str, title: str | None, hub: dict[str, Any], paper: PaperCard | None) -> list[str]:
    """What the benchmark measures and the gallery of example items (after Loading)."""
    lines = ["## What it measures", ""]
    lines += [paper.measures if paper else f"The {title or benchmark} benchmark's task, built by its recipe.", ""]
    if hub.get("gallery"):
        lines += [
            "## Example items",
            "",
            f"![example items: media, question, options (✓ = correct), answer]({hub['gallery']})",
            "",
        ]
    return lines


def hub_outro(benchmark: str, title: str | None, paper: PaperCard | None) -> list[str]:
    """Uses and limitations, and the paper's citation (``paper``: the spec's facts; None for a plug-in without them)."""
    lines = ["## Uses and limitations", "", f"**Uses.** {USES}", ""]
    lines += [f"**Limitations.** {(paper.limitations + ' ') if paper else ''}{GENERAL_LIMITATIONS}", ""]
    lines += ["## Citation", ""]
    if paper:
        lines += [
            f"This export follows the construction of {title or benchmark}; cite the paper:",
            "",
            "```bibtex",
            paper.citation,
            "```",
            "",
        ]
    else:
        lines += [f"No citation on record for `{benchmark}` (a plug-in benchmark: see its spec).", ""]
    return lines


def blind_section(table: pd.DataFrame, setting: dict[str, Any]) -> list[str]:
    """The text-only probe's accuracy overall and per task, split and category (``setting``:
    model, action, trials ...). Present on every card of a benchmark with multiple-choice items."""
    lines = ["## Text-only (blind) accuracy", ""]
    if setting.get("note"):
        lines += [str(setting["note"]), ""]
    if table.empty:
        return lines + ["Not measured for these items (no multiple-choice item was probed).", ""]
    lines += [
        "The same multiple-choice items answered without the image, by "
        f"`{setting.get('model') or '?'}` ({setting.get('backend') or '?'}), up to {setting.get('trials')} "
        f"samples per item at temperature {setting.get('temperature')}"
        + (", each item's sampling stopped once its verdict was decided" if setting.get("early_stop") else "")
        + f". Action: **{setting.get('action')}** — "
        + (
            "flagged items were dropped (opt-in `blind.action: drop`)."
            if setting.get("action") == "drop"
            else "nothing is dropped for it; filter on the `blind_*` columns to leave out text-solvable items."
        ),
        "",
        md_table(table.set_index("slice")),
        "",
    ]
    return lines


def imported_section(n_imported: int, opt_ins: list[str], reshuffled: int) -> list[str]:
    """What the gates did to items of a published release: nothing, unless an opt-in said so."""
    if not n_imported:
        return []
    head = f"{n_imported} item(s) come from a published release (`origin = imported`). "
    if not opt_ins:
        return [
            "## Imported release items",
            "",
            head + "Question, options, option order, letters and gold are exactly as released; no gate "
            "re-lettered, de-duplicated or dropped them for text-solvability.",
            "",
        ]
    return [
        "## Imported release items",
        "",
        f"> **Imported items changed by opt-in options:** {', '.join(f'`gates.imported.{o}`' for o in opt_ins)}"
        + (f" ({reshuffled} item(s) re-lettered)." if reshuffled else "."),
        "",
        head + "Without these options they would be exactly as released.",
        "",
    ]


def card_for_ui(card: str, export_dir: Path, limit: int = 16000) -> str:
    """The card as Dagster shows it (``MetadataValue.md``): front matter dropped, text cut at a
    line near ``limit`` characters, and the plots inlined as ``data:`` URIs: the card's relative
    ``plots/…`` paths would resolve against the UI's own address and 404 there."""
    body = card.split("---\n", 2)[-1] if card.startswith("---\n") else card
    if len(body) > limit:
        body = body[: body.rfind("\n", 0, limit)] + "\n\n_… the full card is README.md in the export._"

    def inline(m: re.Match) -> str:
        f = export_dir / "plots" / m.group(2)
        if not f.is_file():
            return m.group(0)
        return f"![{m.group(1)}](data:image/png;base64,{base64.b64encode(f.read_bytes()).decode()})"

    return re.sub(r"!\[([^\]]*)\]\(plots/([^)\s]+\.png)\)", inline, body)
