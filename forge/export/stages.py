"""The export stage of every benchmark, Dagster-free: the review gate over the gated items, then
an immutable versioned export with its dataset card (``forge/export/write.py``), and its checks.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from forge.benchmarks.review_spec import ReviewSpec
from forge.benchmarks.settings import profiles_of, settings_hash
from forge.benchmarks.spec import BenchmarkSpec
from forge.export.card import blind_section, card_for_ui, imported_section, is_human_reviewed
from forge.export.provenance import benchmark_cost, provenance
from forge.export.write import exports_frame, write_export
from forge.gates import blind
from forge.gates import checks as sg
from forge.gates.stages import BLIND_PROMPT
from forge.items.fields import LIST_COLUMNS, imported_ids, is_mcq, lst
from forge.items.manifest import MANIFEST, existing_versions, read_manifest
from forge.items.read import read_table
from forge.llm.prompts import load_prompt
from forge.llm.stub import StubOutputError, ensure_no_stub, stub_made
from forge.provenance.lineage import union as lineage_union
from forge.provenance.versioning import sha256_bytes, sha256_file
from forge.review.card import human_figures
from forge.review.stages import export_gate as review_gate
from forge.splits.config import GateConfig, StageSettings
from forge.storage import TableStore
from forge.storage.paths import resolve_stored
from forge.storage.result import Check, FilePath, Markdown, StageResult
from forge.storage.trees import fetch_tree, publish_tree


def exports_dir(store: TableStore) -> Path:
    return store.data_dir / "exports"


def integrity(store: TableStore, name: str) -> tuple[int, list[str]]:
    """Versions checked and files whose bytes no longer match their manifest (should be none)."""
    bad: list[str] = []
    versions = existing_versions(exports_dir(store) / name)
    for _, d in versions:
        for rel, sha in read_manifest(d).get("files", {}).items():
            f = d / rel
            if not f.is_file() or sha256_file(f) != sha:
                bad.append(f"{d.name}/{rel}")
    return len(versions), bad


def card_gates(res: pd.DataFrame) -> dict[str, Any]:
    if res.empty:
        return {}
    b = res[res["blind_trials"].notna() & (res["blind_trials"] > 0)]
    k = b[b["status"] == "kept"]

    def acc(x: pd.DataFrame) -> float:
        return (
            round(float(x["blind_correct"].sum() / x["blind_trials"].sum()), 4)
            if len(x) and x["blind_trials"].sum()
            else 0.0
        )

    return {
        "items before gates": len(res),
        "items kept": int((res["status"] == "kept").sum()),
        "dropped by reason": res["reason"].value_counts().to_dict(),
        "blind solver (text only) accuracy before → after": f"{acc(b)} → {acc(k)} over {len(b)} MCQ items",
        "blind-solvable flagged": int(b["blind_flagged"].fillna(False).astype(bool).sum()),
        "options re-shuffled for position balance": int(res["reshuffled"].sum()),
    }


def run_export(store: TableStore, spec: BenchmarkSpec, settings: StageSettings, force_stub: bool) -> StageResult:
    """Gate, write and check ``spec``'s export: table ``exports`` (part ``spec.name``: every version),
    metadata (``status`` ``refused``: a refused export, the asset fails), checks."""
    name = spec.name
    gated = read_table(store, "gated_items", parts=[name])
    for c in LIST_COLUMNS:  # Parquet lists come back as numpy arrays
        if c in gated:
            gated[c] = gated[c].map(lst)
    # human review (forge/review, docs/review.md): rejected items leave, and under policy `required`
    # so do items without their accepted verdicts; reviewers' edits arrive as new revisions
    gcfg = settings.gates
    built = len(gated)
    gated, review = _review(store, spec, settings.review_settings(), gated, gcfg.imported.review)
    review["human_figures"] = human_figures(store, name)  # the card's human baselines and judge kappas
    md: dict[str, Any] = {"force_stub": force_stub, "review_coverage": review.get("coverage", "")}
    if review.get("summary"):  # what was reviewed and what is held back, as the card's first line says it
        md["review"] = review["summary"]
    stub_n = sum(1 for r in gated.to_dict("records") if stub_made(r))
    status, refused = "nothing", False
    if gated.empty and built and str(review.get("policy")) == "required":  # review held every item back
        md["note"] = nothing_accepted_note(store, name, review, built)
    elif gated.empty:
        md["note"] = f"no gated items for {name}: nothing exported (is `{spec.items_table}` empty?)"
    else:
        try:
            if not force_stub:
                ensure_no_stub(gated, what=f"{name} export")
        except StubOutputError as exc:
            refused, status = True, "refused"
            md["note"] = str(exc) + " — or set force_stub: true (run config / config/splits.yaml) to export anyway"
        if not refused:
            lin_backends, lin_models = lineage_union(
                gated["lineage"] if "lineage" in gated else [], gated["backend"], gated["model"].astype(str)
            )
            prov = provenance(
                gated, read_table(store, "source_items"), read_table(store, "videos"), read_table(store, "frames")
            )
            recipe_path = spec.recipe_config_path()
            has_recipe = recipe_path is not None and recipe_path.exists()
            recipe_text = recipe_path.read_text() if has_recipe else "# (no recipe config file)\n"
            cost = benchmark_cost(read_table(store, "llm_calls"), name, len(gated))
            res = read_table(store, "gate_results", parts=[name])
            blind = res[res["blind_trials"].notna()] if len(res) else res
            gates_fig = card_gates(res)
            failed = failed_gates(gated, res, gcfg)
            if failed:
                gates_fig["failed gates"] = failed
            ctx = {
                "path_hint": f"data/exports/{name}/<version>",
                "title": spec.title,
                # every backend / model behind the items across stages (lineage), not the last step's label
                "backends": ", ".join(lin_backends) or "unknown",
                "models": ", ".join(lin_models) or "unknown",
                "prompt_hashes": sorted(gated["prompt_hash"].dropna().astype(str).unique()),
                "blind_prompt_hash": ", ".join(sorted(blind["blind_prompt_hash"].dropna().unique()))
                if len(blind)
                else "",
                "blind_model": ", ".join(sorted(blind["blind_model"].dropna().unique())) if len(blind) else "",
                "recipe_config": recipe_text,
                "recipe_config_hash": sha256_bytes(recipe_text.encode())[:12],
                "recipe_config_name": _display_path(recipe_path) if recipe_path is not None else None,
                # which settings profile made the items (paper = the file's top level), with the
                # hash of the settings in effect under it
                "recipe_profiles": {
                    p: settings_hash(recipe_path, p) if recipe_path is not None else None
                    for p in profiles_of(gated.get("extra", pd.Series(dtype=str)))
                },
                "cost": cost,
                "gates": gates_fig,
                "failed_gates": failed,
                # the text-only probe's accuracy and what the gates did to imported release items
                "extra_sections": [x for x in ("\n".join(_card_sections(gated, res, gcfg)), *spec.card_sections) if x],
                "review": review,
            }
            stage_cfg = settings.recorded()
            stage_cfg["export"] = dict(stage_cfg.get("export") or {}, force_stub=force_stub)
            stage_cfg["blind_prompt_hash"] = load_prompt(BLIND_PROMPT).hash
            stage_cfg["review"] = {k: review.get(k) for k in ("policy", "reviewers_per_item", "splits_reviewed")}
            fetch_tree(store, f"exports/{name}")  # on object storage: earlier versions, to number and diff against
            out = write_export(
                exports_dir=exports_dir(store),
                data_dir=store.data_dir,
                spec=spec,
                items=gated,
                provenance=prov,
                split_order=settings.sizes.names,
                stage_config=stage_cfg,
                card_context=ctx,
                forced_stub=force_stub and stub_n > 0,
                stub_items=stub_n,
                copy_media=settings.export.copy_media,
            )
            status = out.status
            if out.status == "written":  # on object storage: the new version into the bucket, its manifest last
                publish_tree(store, f"exports/{name}/{out.version}", marker=MANIFEST, once=True)
            md.update(
                {
                    "export_path": FilePath(str(out.path)),
                    "version": out.version,
                    "content_hash": out.content_hash,
                    "n_items": out.manifest["n_items"],
                    "splits": out.manifest["splits"],
                    "changes": out.manifest.get("changes", {}),
                    "cost_per_item_usd": round(cost["per_item"], 6),
                    "llm_cost_usd": round(cost["cost_usd"], 6),
                }
            )
            for k, v in out.manifest["splits"].items():
                md[f"split/{k}"] = v
            if out.status == "unchanged":
                md["note"] = f"content unchanged since {out.version}: no new version written"
            card = (out.path / "README.md").read_text()
            md["card"] = Markdown(card_for_ui(card, out.path))
            if failed:
                md["failed_gates"] = failed
    md["status"] = status
    md["stub_items"] = stub_n
    n_versions, bad = integrity(store, name)
    checks = [
        Check(
            "export_no_stub",
            stub_n == 0,
            "error" if refused else "warn",
            {
                "stub_items": stub_n,
                "forced": force_stub,
                "outcome": "refused" if refused else ("exported (forced; the card says so)" if stub_n else "none"),
            },
        ),
        Check("export_integrity", not bad, "error", {"versions": n_versions, "modified_files": bad[:20]}),
    ]
    return StageResult(
        {"exports": {name: exports_frame(exports_dir(store), name, store.data_dir)}}, metadata=md, checks=checks
    )


def nothing_accepted_note(store: TableStore, name: str, review: dict[str, Any], built: int) -> str:
    """Under ``required`` with no item accepted: "no reviewed items yet: 0 of 20 accepted; the latest
    export v1 is unreviewed" (or "no export yet"), so no one takes the old version for a reviewed one."""
    out = f"no reviewed items yet: {review.get('accepted', 0)} of {review.get('items_needing_review', built)} accepted"
    latest = latest_export(store, name)
    if latest is None:
        return out + f"; no {name} export yet"
    version, reviewed = latest
    return out + f"; the latest export {version} is " + ("human-reviewed" if reviewed else "unreviewed")


def latest_export(store: TableStore, name: str) -> tuple[str, bool] | None:
    """(version, whether its card says human-reviewed) of the benchmark's latest export; None without one."""
    ex = read_table(store, "exports")
    ex = ex[ex["benchmark"] == name] if len(ex) else ex
    if not len(ex):
        return None
    row = ex.sort_values("version_number").iloc[-1]
    card = resolve_stored(str(row["path"]), store.data_dir) / "README.md"
    return str(row["version"]), card.is_file() and is_human_reviewed(card.read_text())


def _review(
    store: TableStore, spec: BenchmarkSpec, rs: ReviewSpec, gated: pd.DataFrame, imported_too: bool
) -> tuple[pd.DataFrame, dict]:
    """The human-review gate over the built items. Imported release items were reviewed by the
    paper's annotators and stay as released: they pass unchanged unless ``gates.imported.review``."""
    imported = set() if imported_too or gated.empty else imported_ids(gated)
    if not imported:
        return review_gate(store, spec, rs, gated)
    own = gated["item_id"].isin(imported)
    kept, review = review_gate(store, spec, rs, gated[~own])
    review["imported_not_reviewed"] = int(own.sum())
    return pd.concat([kept, gated[own]], ignore_index=True), review


def _card_sections(gated: pd.DataFrame, res: pd.DataFrame, gcfg: GateConfig) -> list[str]:
    """The card's text-only probe section (every benchmark with multiple-choice items) and what
    the gates did to imported release items."""
    out: list[str] = []
    if gated.apply(is_mcq, axis=1).any():
        kept = res[res["status"] == "kept"] if len(res) else res
        tested = kept[kept["blind_trials"].notna()] if len(kept) else kept
        bc = gcfg.blind
        setting = {
            "model": ", ".join(sorted(tested["blind_model"].dropna().astype(str).unique())) if len(tested) else "",
            "backend": ", ".join(sorted(tested["blind_backend"].dropna().astype(str).unique())) if len(tested) else "",
            "trials": bc.trials,
            "temperature": bc.temperature,
            "early_stop": bc.early_stop,
            "action": str(bc.action),
            "note": "The probe is off (`blind.action: off`)." if not bc.enabled else "",
        }
        out += blind_section(blind.accuracy_table(kept, gated) if len(kept) else pd.DataFrame(), setting)
    imported = imported_ids(gated)
    resh = int(gated.loc[gated["item_id"].isin(imported), "reshuffled"].astype(bool).sum()) if imported else 0
    return out + imported_section(len(imported), gcfg.imported.enabled(), resh)


def failed_gates(gated: pd.DataFrame, res: pd.DataFrame, gcfg: GateConfig) -> list[str]:
    """The gates the exported items do not pass, in words, recomputed from what is exported
    (length bias, position balance) and from ``gate_results`` (blind-solver coverage)."""
    out = []
    lb = sg.length_figure(gated)
    if lb.n and lb.excess > gcfg.max_length_excess:
        out.append(
            f"length bias: the correct option is the longest in {lb.share_longest:.0%} of {lb.n} items "
            f"(chance {lb.chance:.0%}, allowed excess {gcfg.max_length_excess:.0%})"
        )
    if gcfg.rebalance_positions:
        # imported release items keep the release's letters (gates.imported.rebalance_positions)
        movable = gated if gcfg.imported.rebalance_positions else gated[~gated["item_id"].isin(imported_ids(gated))]
        bad_pos = [f for f in sg.position_figures(movable, gcfg.position_tolerance) if f.max_deviation > f.allowed]
        if bad_pos:
            out.append(
                "position balance: "
                + ", ".join(f"{f.split} deviates {f.max_deviation:.0%} (allowed {f.allowed:.0%})" for f in bad_pos)
            )
    tested = res[res["blind_trials"].notna()] if len(res) else res
    failed = tested["blind_failed"].fillna(0).sum() if "blind_failed" in tested else 0
    if len(tested) and tested["blind_trials"].sum() + failed:
        # answered / asked (early stopping asks fewer than `trials` of a decided item)
        cov = float(tested["blind_trials"].sum()) / float(tested["blind_trials"].sum() + failed)
        if cov < gcfg.blind.min_coverage:
            out.append(
                f"blind solvability: only {cov:.0%} of the blind-solver calls answered "
                f"(floor {gcfg.blind.min_coverage:.0%}); the gate did not run on every item"
            )
    return out


def _display_path(p: Path) -> str:
    root = Path(__file__).resolve().parents[2]
    try:
        return str(p.resolve().relative_to(root))
    except ValueError:
        return p.name
