"""One identical set of downstream assets per recipe: ``<paper>_splits → <paper>_gated → <paper>_export``.

* ``<paper>_splits`` (table ``splits``, file ``<paper>``): leakage groups (source item,
  channel, near-duplicate image) assigned whole to splits, stratified by category. Blocking
  check ``no_leakage_across_splits`` re-audits the written table.
* ``<paper>_gated`` (tables ``gated_items`` and ``gate_results``): drops empty / malformed /
  duplicate / media-less items and blind-solvable ones (text-only model, stage
  ``blind_solver``), re-balances correct-option positions per split; one check per gate
  with its figure.
* ``<paper>_export`` (table ``exports``): an immutable ``data/exports/<paper>/v<N>/`` folder
  that ``datasets.load_dataset`` reads, with a dataset card; refuses stub-made items unless
  ``force_stub``.

An empty or missing ``<paper>_items`` table never fails a run: each asset completes with a
``note`` in its metadata.
"""



import json
import time
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from assets.common import contract_check_specs, publish, table_metadata
from assets.llm_support import llm_metadata, record_llm_calls
from forge.checks import mcq
from forge.contracts import load_contract
from forge.llm.prompts import load_prompt
from forge.lineage import union as lineage_union
from forge.llm.stub import StubOutputError, ensure_no_stub, stub_made
from forge.splits import assign as sa
from forge.splits import gates as sg
from forge.splits import leakage as lk
from forge.splits.card import md_table
from forge.splits.config import RECIPES_CONFIG, GateConfig, SplitSizes, benchmark_config
from forge.splits.export import existing_versions, exports_frame, read_manifest, write_export
from forge.splits.provenance import benchmark_cost, provenance
from forge.storage import RejectLog, TableStore
from forge.versioning import content_hash, sha256_bytes, sha256_file
from resources.llm import LLMResource
from resources.storage import StorageResource

VERSION = "1"
PROMPTS = Path(__file__).with_name("prompts")
BLIND_PROMPT = PROMPTS / "blind_solver.yaml"
BLIND_STAGE = "blind_solver"
WARN, ERROR = dg.AssetCheckSeverity.WARN, dg.AssetCheckSeverity.ERROR


def _read(store: TableStore, table: str, parts: list[str] | None = None) -> pd.DataFrame:
    """A table, or an empty frame when it does not exist (yet). A table that exists but cannot
    be read is an error, never "absent": a leakage audit over nothing would pass."""
    return store.read(table, parts=parts)


def read_items(store: TableStore, paper: str) -> pd.DataFrame:
    df = _read(store, f"{paper}_items")
    return df if "item_id" in df.columns else pd.DataFrame(columns=sg.COMMON_COLUMNS)


def split_config_slice(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: cfg.get(k) for k in ("seed", "sizes", "leakage_keys", "near_duplicate")}


def links_for(store: TableStore, items: pd.DataFrame, cfg: dict[str, Any]) -> lk.ItemLinks:
    return lk.build_links(
        items, frames=_read(store, "frames"), duplicates=_read(store, "duplicates"),
        frame_hashes=_read(store, "frame_hashes"), data_dir=store.data_dir,
        kinds=cfg.get("leakage_keys") or lk.KEY_KINDS,
        phash_threshold=int((cfg.get("near_duplicate") or {}).get("phash_threshold", 8)))


def compute_splits(store: TableStore, paper: str, cfg: dict[str, Any]) -> tuple[pd.DataFrame, dict[str, Any]]:
    """The ``splits`` rows for ``paper`` and metadata figures (pure apart from reading tables)."""
    items = read_items(store, paper)
    cols = load_contract("splits").column_names
    if items.empty:
        return pd.DataFrame(columns=cols), {"note": f"no items: `{paper}_items` is missing or empty; nothing to split"}
    items = lk.fill_channels(items, _read(store, "videos"))
    items["item_id"] = items["item_id"].astype(str)
    links = links_for(store, items, cfg)
    groups = lk.leakage_groups(items["item_id"], links)
    sizes = SplitSizes.parse(cfg["sizes"])
    seed = int(cfg.get("seed", 0))
    assigned = sa.assign_splits(items, groups, sizes, seed)
    m = assigned.merge(items[["item_id", "category", "task", "source_item_id", "channel"]], on="item_id", how="left")
    m["group_size"] = m.groupby("group_id")["item_id"].transform("size").astype("int64")
    m["benchmark"], m["seed"] = paper, seed
    m["version"] = content_hash(VERSION, split_config_slice(cfg))
    rep = lk.cross_split_pairs(assigned, links)
    counts = assigned["split"].value_counts().reindex(sizes.names, fill_value=0)
    md = {
        "items": len(m), "groups": int(assigned["group_id"].nunique()), "largest_group": int(m["group_size"].max()),
        "largest_group_share": round(float(m["group_size"].max()) / len(m), 4),
        "split_counts": dg.MetadataValue.json({k: int(v) for k, v in counts.items()}),
        "split_targets": dg.MetadataValue.json({k: round(v, 1) for k, v in sizes.targets(len(m)).items()}),
        "stratification_max_error": round(sa.stratification_error(assigned, items), 4),
        "links_by_kind": dg.MetadataValue.json(links.keys["kind"].value_counts().to_dict() | {
            "phash_pairs": len(links.phash_item_pairs())}),
        "cross_split_linked_pairs": rep.total,
        "per_category": dg.MetadataValue.md(md_table(sa.split_summary(assigned, items))),
    }
    for k, v in counts.items():
        md[f"split/{k}"] = int(v)
    return m[cols], md


def leakage_check_result(store: TableStore, paper: str, cfg: dict[str, Any]) -> dg.AssetCheckResult:
    """Audit the written ``splits`` table: linked item pairs (source, channel, near-duplicate
    group, pHash ≤ threshold) that sit in two different splits. Passes only at 0."""
    sp = _read(store, "splits", parts=[paper])
    items = read_items(store, paper)
    if sp.empty or items.empty:
        return dg.AssetCheckResult(passed=True, severity=ERROR, metadata={"items": 0, "note": "no split items"})
    items = lk.fill_channels(items[items["item_id"].astype(str).isin(set(sp["item_id"]))], _read(store, "videos"))
    rep = lk.cross_split_pairs(sp[["item_id", "split"]], links_for(store, items, cfg))
    return dg.AssetCheckResult(
        passed=rep.total == 0, severity=ERROR,
        metadata={"items": len(sp), "cross_split_pairs": rep.total, "near_duplicate_pairs": rep.near_duplicate_pairs,
                  "pairs_by_kind": dg.MetadataValue.json(rep.pairs), "examples": dg.MetadataValue.json(rep.examples)})


# -- gates ----------------------------------------------------------------------------------------

GATE_CHECKS = {
    "gate_position_balance": "Correct-option share per letter within ± tolerance of uniform in every split (or the "
                             "closest the split size allows), after the seeded re-shuffle.",
    "gate_length_bias": "Share of items whose correct option is strictly the longest, minus chance (mean 1/k) ≤ max.",
    "gate_blind_solvability": "A text-only model answers each MCQ N times without the image; items far above chance "
                              "(binomial test + min accuracy) are dropped. Blind accuracy before/after.",
    "gate_duplicates": "Duplicate items (same question, options, media) and items with (near-)duplicate options.",
    "gate_empty_fields": "Items with empty fields, answers outside the options, misaligned option types or missing media.",
    "gate_stub_items": "Items made by the offline stub LLM backend (refused by the export unless forced).",
}


def run_gates(store: TableStore, paper: str, cfg: dict[str, Any], llm: LLMResource,
              log: Any = None) -> tuple[dict[str, pd.DataFrame], RejectLog, dict[str, Any], list[dg.AssetCheckResult]]:
    gcfg = GateConfig.from_config(cfg)
    rej = RejectLog(f"{paper}_gated", "all")
    gi_cols = load_contract("gated_items").column_names
    gr_cols = load_contract("gate_results").column_names
    items = read_items(store, paper)
    sp = _read(store, "splits", parts=[paper])
    md: dict[str, Any] = {}
    if items.empty or sp.empty:
        md["note"] = (f"no items: `{paper}_items` is missing or empty" if items.empty
                      else f"no splits for {paper}: materialize `{paper}_splits` first")
        checks = [dg.AssetCheckResult(check_name=c, passed=True, severity=WARN, metadata={"items": 0, "note": md["note"]})
                  for c in GATE_CHECKS]
        return ({"gated_items": pd.DataFrame(columns=gi_cols), "gate_results": pd.DataFrame(columns=gr_cols)},
                rej, md, checks)
    df = sg.normalise_items(items, paper)
    df = df.merge(sp[["item_id", "split", "group_id"]], on="item_id", how="inner")
    md["items_without_split"] = int(len(items) - len(df))
    df["reshuffled"] = False
    status: dict[str, tuple[str, str]] = {}

    # 1. empty fields / contract / media
    for _, r in df.iterrows():
        p = sg.field_problem(r, store.data_dir if gcfg.check_media_files else None)
        if p:
            status[r["item_id"]] = p
    # 2. duplicate items
    alive = df[~df["item_id"].isin(status)]
    dups = sg.duplicate_items(alive)
    for i, kept in dups.items():
        status[i] = ("duplicate_item", f"same question, options and media as {kept}")
    alive = df[~df["item_id"].isin(status)]
    dup_opts = mcq.duplicate_stats(((r["item_id"], list(r["options"])) for _, r in alive.iterrows() if sg.is_mcq(r)),
                                   gcfg.duplicate_option_threshold)

    # 3. blind solvability (text only, through the engine: cached, logged to llm_calls)
    bc = gcfg.blind
    scores: dict[str, sg.BlindScore] = {}
    blind_backend = blind_model = blind_hash = None
    engine = None
    mcq_alive = alive[alive.apply(sg.is_mcq, axis=1)] if len(alive) else alive
    if bc.enabled and len(mcq_alive):
        sel = mcq_alive.sort_values("item_id")
        if bc.max_items:
            sel = sel.head(bc.max_items)
        prompt = load_prompt(BLIND_PROMPT)
        engine = llm.engine()
        results = engine.run(BLIND_STAGE, paper, sg.blind_requests(sel, prompt, bc))
        scores = sg.score_blind(sel, results, bc)
        ok = [r for r in results if r.ok]
        first = ok[0] if ok else (results[0] if results else None)
        if first is not None:
            blind_backend, blind_model, blind_hash = first.backend, first.model, first.prompt_hash
        md.update(llm_metadata(engine))
        record_llm_calls(store, engine, [(BLIND_STAGE, paper)])
    flagged = [s for s in scores.values() if s.flagged]
    blind_failed = sum(s.failed for s in scores.values())
    blind_sent = blind_failed + sum(s.trials for s in scores.values())
    blind_coverage = round(1 - blind_failed / blind_sent, 4) if blind_sent else 1.0
    # A stub "model" answers at random: its flags mean nothing, so they never drop an item.
    drop_blind = bc.drop and blind_backend != "stub"
    if drop_blind:
        for s in flagged:
            status[s.item_id] = ("blind_solvable", f"{s.correct}/{s.trials} correct without the image "
                                                   f"(chance {s.chance:.2f}, p={s.p_value:.4g})")
    kept = df[~df["item_id"].isin(status)].copy()

    # 4. correct-option positions per split
    before = sg.position_figures(kept, gcfg.position_tolerance)
    moved = 0
    if gcfg.rebalance_positions:
        kept, moved = sg.rebalance_positions(kept, gcfg.position_tolerance, seed=(cfg.get("seed", 0), paper))
    after = sg.position_figures(kept, gcfg.position_tolerance)
    lb = sg.length_figure(kept)

    for item_id, (reason, detail) in sorted(status.items()):
        rej.add(item_id, reason, "GateReject", detail, related_id=dups.get(item_id))
    kept["blind_trials"] = kept["item_id"].map(lambda i: scores[i].trials if i in scores else None)
    kept["blind_correct"] = kept["item_id"].map(lambda i: scores[i].correct if i in scores else None)
    kept["blind_p_value"] = kept["item_id"].map(lambda i: scores[i].p_value if i in scores else None)
    res_rows = []
    resh = dict(zip(kept["item_id"], kept["reshuffled"]))
    for _, r in df.iterrows():
        s = scores.get(r["item_id"])
        st = status.get(r["item_id"])
        res_rows.append({
            "benchmark": paper, "item_id": r["item_id"], "split": r["split"], "category": r["category"],
            "status": "dropped" if st else "kept", "reason": st[0] if st else None, "detail": st[1] if st else None,
            "mcq": bool(sg.is_mcq(r)), "blind_trials": s.trials if s else None, "blind_correct": s.correct if s else None,
            "blind_chance": s.chance if s else None, "blind_p_value": s.p_value if s else None,
            "blind_flagged": s.flagged if s else None, "blind_model": blind_model if s else None,
            "blind_backend": blind_backend if s else None, "blind_prompt_hash": blind_hash if s else None,
            "reshuffled": bool(resh.get(r["item_id"], False)), "backend": r["backend"],
        })
    results_df = pd.DataFrame(res_rows, columns=gr_cols)
    kept["benchmark"] = paper

    # figures and checks
    reasons = results_df["reason"].value_counts().to_dict()
    acc_before = sg.blind_accuracy(list(scores.values()))
    acc_after = sg.blind_accuracy([s for i, s in scores.items() if i in set(kept["item_id"])])
    stub_n = sum(1 for r in kept.to_dict("records") if stub_made(r))
    per_split = kept["split"].value_counts().to_dict()
    md.update({
        "items_in": len(df), "items_kept": len(kept), "items_dropped": len(status),
        "dropped_by_reason": dg.MetadataValue.json(reasons),
        "kept_per_split": dg.MetadataValue.json({k: int(v) for k, v in per_split.items()}),
        "blind_accuracy_before": acc_before, "blind_accuracy_after": acc_after,
        "blind_items": len(scores), "blind_flagged": len(flagged), "positions_reshuffled": moved,
        "blind_failed_calls": blind_failed, "blind_coverage": blind_coverage,
        "length_bias_share_longest": round(lb.share_longest, 4), "length_bias_excess": round(lb.excess, 4),
        "stub_items": stub_n,
    })
    for k, v in per_split.items():
        md[f"split/{k}"] = int(v)
    pos_fail = [f for f in after if not f.passed]
    fig_json = [{"split": f.split, "k": f.k, "n": f.n, "max_deviation": f.max_deviation, "allowed": f.allowed,
                 "counts": f.counts} for f in after]
    blind_note = ("blind solver ran on the stub backend: random answers, nothing dropped" if blind_backend == "stub"
                  else "disabled" if not bc.enabled else "no multiple-choice items" if not scores else
                  "flag only (blind.drop: false)" if not bc.drop else "flagged items dropped")
    checks = [
        dg.AssetCheckResult(check_name="gate_position_balance", passed=not pos_fail, severity=WARN, metadata={
            "max_deviation": max((f.max_deviation for f in after), default=0.0),
            "max_deviation_before": max((f.max_deviation for f in before), default=0.0),
            "tolerance": gcfg.position_tolerance, "reshuffled": moved, "per_split": dg.MetadataValue.json(fig_json)}),
        dg.AssetCheckResult(check_name="gate_length_bias", passed=lb.excess <= gcfg.max_length_excess, severity=WARN,
                            metadata={"items": lb.n, "share_longest": round(lb.share_longest, 4),
                                      "chance": round(lb.chance, 4), "excess": round(lb.excess, 4),
                                      "share_shortest": round(lb.share_shortest, 4), "max_excess": gcfg.max_length_excess}),
        # An outage of the blind solver is not a pass: below the coverage floor the gate fails (ERROR).
        dg.AssetCheckResult(check_name="gate_blind_solvability",
                            severity=ERROR if blind_coverage < bc.min_coverage else WARN,
                            passed=blind_coverage >= bc.min_coverage and (not flagged or (
                                drop_blind and not any(s.item_id in set(kept["item_id"]) for s in flagged))),
                            metadata={"items_tested": len(scores), "trials": bc.trials, "flagged": len(flagged),
                                      "failed_calls": blind_failed, "coverage": blind_coverage,
                                      "min_coverage": bc.min_coverage,
                                      "dropped": reasons.get("blind_solvable", 0), "accuracy_before": acc_before,
                                      "accuracy_after": acc_after, "alpha": bc.alpha, "min_accuracy": bc.min_accuracy,
                                      "model": blind_model or "", "backend": blind_backend or "", "note": blind_note}),
        dg.AssetCheckResult(check_name="gate_duplicates", severity=WARN,
                            passed=reasons.get("duplicate_item", 0) == 0 and dup_opts.items_with_duplicates == 0,
                            metadata={"duplicate_items_dropped": reasons.get("duplicate_item", 0),
                                      "items_with_duplicate_options": dup_opts.items_with_duplicates,
                                      "duplicate_option_rate": round(dup_opts.rate, 4),
                                      "examples": dg.MetadataValue.json(dup_opts.examples)}),
        dg.AssetCheckResult(check_name="gate_empty_fields", severity=WARN,
                            passed=not any(reasons.get(k) for k in ("empty_field", "contract_violation", "media_missing")),
                            metadata={k: int(reasons.get(k, 0)) for k in ("empty_field", "contract_violation", "media_missing")}
                            | {"failure_rate": round(sum(reasons.get(k, 0) for k in ("empty_field", "contract_violation",
                                                                                     "media_missing")) / len(df), 4)}),
        dg.AssetCheckResult(check_name="gate_stub_items", passed=stub_n == 0, severity=WARN,
                            metadata={"stub_items": stub_n, "kept_items": len(kept),
                                      "note": "the export refuses these unless force_stub" if stub_n else "none"}),
    ]
    return {"gated_items": kept.reindex(columns=gi_cols), "gate_results": results_df}, rej, md, checks


# -- export -----------------------------------------------------------------------------------------


def exports_dir(store: TableStore) -> Path:
    return store.data_dir / "exports"


def integrity(store: TableStore, paper: str) -> tuple[int, list[str]]:
    """Versions checked and files whose bytes no longer match their manifest (should be none)."""
    bad: list[str] = []
    versions = existing_versions(exports_dir(store) / paper)
    for _, d in versions:
        for rel, sha in read_manifest(d).get("files", {}).items():
            f = d / rel
            if not f.is_file() or sha256_file(f) != sha:
                bad.append(f"{d.name}/{rel}")
    return len(versions), bad


def run_export(store: TableStore, paper: str, cfg: dict[str, Any], force_stub: bool) -> tuple[pd.DataFrame, dict[str, Any], list[dg.AssetCheckResult]]:
    gated = _read(store, "gated_items", parts=[paper])
    for c in sg.LIST_COLUMNS:  # Parquet lists come back as numpy arrays
        if c in gated:
            gated[c] = gated[c].map(sg._lst)
    md: dict[str, Any] = {"force_stub": force_stub}
    stub_n = sum(1 for r in gated.to_dict("records") if stub_made(r))
    status, refused = "nothing", False
    if gated.empty:
        md["note"] = f"no gated items for {paper}: nothing exported (is `{paper}_items` empty?)"
    else:
        try:
            if not force_stub:
                ensure_no_stub(gated, what=f"{paper} export")
        except StubOutputError as exc:
            refused, status = True, "refused"
            md["note"] = str(exc) + " — or set force_stub: true (run config / config/splits.yaml) to export anyway"
        if not refused:
            lin_backends, lin_models = lineage_union(
                gated["lineage"] if "lineage" in gated else [], gated["backend"], gated["model"].astype(str))
            prov = provenance(gated, _read(store, "source_items"), _read(store, "videos"), _read(store, "frames"))
            recipe_path = RECIPES_CONFIG / f"{paper}.yaml"
            recipe_text = recipe_path.read_text() if recipe_path.exists() else "# (no recipe config file)\n"
            cost = benchmark_cost(_read(store, "llm_calls"), paper, len(gated))
            res = _read(store, "gate_results", parts=[paper])
            gates_fig = _card_gates(res)
            failed = failed_gates(gated, res, cfg)
            if failed:
                gates_fig["failed gates"] = failed
            splits_cfg = SplitSizes.parse(cfg["sizes"]).names
            blind = res[res["blind_trials"].notna()] if len(res) else res
            ctx = {
                "path_hint": f"data/exports/{paper}/<version>",
                # every backend / model behind the items across stages (lineage), not the last step's label
                "backends": ", ".join(lin_backends) or "unknown", "models": ", ".join(lin_models) or "unknown",
                "prompt_hashes": sorted(gated["prompt_hash"].dropna().astype(str).unique()),
                "blind_prompt_hash": ", ".join(sorted(blind["blind_prompt_hash"].dropna().unique())) if len(blind) else "",
                "blind_model": ", ".join(sorted(blind["blind_model"].dropna().unique())) if len(blind) else "",
                "recipe_config": recipe_text, "recipe_config_hash": sha256_bytes(recipe_text.encode())[:12],
                "cost": cost, "gates": gates_fig, "failed_gates": failed,
            }
            stage_cfg = json.loads(json.dumps({k: v for k, v in cfg.items()}, default=str))
            stage_cfg["export"] = dict(stage_cfg.get("export") or {}, force_stub=force_stub)
            stage_cfg["blind_prompt_hash"] = load_prompt(BLIND_PROMPT).hash
            out = write_export(exports_dir=exports_dir(store), data_dir=store.data_dir, benchmark=paper, items=gated,
                               provenance=prov, split_order=splits_cfg, stage_config=stage_cfg, card_context=ctx,
                               forced_stub=force_stub and stub_n > 0, stub_items=stub_n,
                               copy_media=bool((cfg.get("export") or {}).get("copy_media", True)))
            status = out.status
            md.update({"export_path": dg.MetadataValue.path(str(out.path)), "version": out.version,
                       "content_hash": out.content_hash, "n_items": out.manifest["n_items"],
                       "splits": dg.MetadataValue.json(out.manifest["splits"]),
                       "changes": dg.MetadataValue.json(out.manifest.get("changes", {})),
                       "cost_per_item_usd": round(cost["per_item"], 6), "llm_cost_usd": round(cost["cost_usd"], 6)})
            for k, v in out.manifest["splits"].items():
                md[f"split/{k}"] = v
            if out.status == "unchanged":
                md["note"] = f"content unchanged since {out.version}: no new version written"
            card = (out.path / "README.md").read_text()
            md["card"] = dg.MetadataValue.md(card.split("---\n", 2)[-1][:6000])
            if failed:
                md["failed_gates"] = dg.MetadataValue.json(failed)
    md["status"] = status
    md["stub_items"] = stub_n
    n_versions, bad = integrity(store, paper)
    checks = [
        dg.AssetCheckResult(
            check_name="export_no_stub", severity=ERROR if refused else WARN, passed=stub_n == 0,
            metadata={"stub_items": stub_n, "forced": force_stub,
                      "outcome": "refused" if refused else ("exported (forced; the card says so)" if stub_n else "none")}),
        dg.AssetCheckResult(check_name="export_integrity", severity=ERROR, passed=not bad,
                            metadata={"versions": n_versions, "modified_files": dg.MetadataValue.json(bad[:20])}),
    ]
    return exports_frame(exports_dir(store), paper), md, checks


def failed_gates(gated: pd.DataFrame, res: pd.DataFrame, cfg: dict[str, Any]) -> list[str]:
    """The gates the exported items do not pass, in words, recomputed from what is exported
    (length bias, position balance) and from ``gate_results`` (blind-solver coverage)."""
    gcfg = GateConfig.from_config(cfg)
    out = []
    lb = sg.length_figure(gated)
    if lb.n and lb.excess > gcfg.max_length_excess:
        out.append(f"length bias: the correct option is the longest in {lb.share_longest:.0%} of {lb.n} items "
                   f"(chance {lb.chance:.0%}, allowed excess {gcfg.max_length_excess:.0%})")
    bad_pos = [f for f in sg.position_figures(gated, gcfg.position_tolerance) if f.max_deviation > f.allowed]
    if bad_pos:
        out.append("position balance: " + ", ".join(f"{f.split} deviates {f.max_deviation:.0%} (allowed {f.allowed:.0%})"
                                                    for f in bad_pos))
    tested = res[res["blind_trials"].notna()] if len(res) else res
    if len(tested):
        cov = float(tested["blind_trials"].sum()) / (len(tested) * gcfg.blind.trials)
        if cov < gcfg.blind.min_coverage:
            out.append(f"blind solvability: only {cov:.0%} of the blind-solver calls answered "
                       f"(floor {gcfg.blind.min_coverage:.0%}); the gate did not run on every item")
    return out


def _card_gates(res: pd.DataFrame) -> dict[str, Any]:
    if res.empty:
        return {}
    b = res[res["blind_trials"].notna() & (res["blind_trials"] > 0)]
    k = b[b["status"] == "kept"]

    def acc(x: pd.DataFrame) -> float:
        return round(float(x["blind_correct"].sum() / x["blind_trials"].sum()), 4) if len(x) and x["blind_trials"].sum() else 0.0

    return {"items before gates": len(res), "items kept": int((res["status"] == "kept").sum()),
            "dropped by reason": res["reason"].value_counts().to_dict(),
            "blind solver (text only) accuracy before → after": f"{acc(b)} → {acc(k)} over {len(b)} MCQ items",
            "blind-solvable flagged": int(b["blind_flagged"].fillna(False).astype(bool).sum()),
            "options re-shuffled for position balance": int(res["reshuffled"].sum())}


# -- the factory ------------------------------------------------------------------------------------


def benchmark_defs(paper: str) -> dg.Definitions:
    cfg = benchmark_config(paper)
    split_key, gated_key, export_key = f"{paper}_splits", f"{paper}_gated", f"{paper}_export"

    @dg.asset(
        name=split_key, group_name="splits", kinds={"python"}, deps=[f"{paper}_items"],
        code_version=content_hash(VERSION, split_config_slice(cfg)),
        check_specs=contract_check_specs(split_key, ["splits"]), metadata=table_metadata(["splits"]),
        description=f"Leakage-free, category-stratified splits of `{paper}_items` (table `splits`, file `{paper}`): "
                    "items sharing a source, channel or near-duplicate image form one group; groups never span splits.",
    )
    def _splits(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        rows, md = compute_splits(storage.store, paper, cfg)
        return publish(storage.store, {"splits": {paper: rows}}, metadata=md, asset_key=context.asset_key, started=t0)

    @dg.asset_check(asset=split_key, name="no_leakage_across_splits", blocking=True,
                    description="0 linked item pairs (same source item, channel, duplicates group or pHash within the "
                                "threshold) across two splits, re-audited from the written `splits` table.")
    def _leak(storage: StorageResource) -> dg.AssetCheckResult:
        return leakage_check_result(storage.store, paper, cfg)

    class GateConfigRun(dg.Config):
        blind_enabled: bool = bool(cfg.get("blind", {}).get("enabled", True))
        blind_drop: bool = bool(cfg.get("blind", {}).get("drop", True))

    gate_specs = contract_check_specs(gated_key, ["gated_items", "gate_results"]) + [
        dg.AssetCheckSpec(name, asset=gated_key, description=desc) for name, desc in GATE_CHECKS.items()]

    @dg.asset(
        name=gated_key, group_name="splits", kinds={"openai", "python"}, pool="llm", deps=[split_key],
        code_version=content_hash(VERSION, {k: cfg.get(k) for k in ("gates", "blind", "seed")}, files=[BLIND_PROMPT]),
        check_specs=gate_specs, metadata=table_metadata(["gated_items"]),
        description=f"Quality gates on `{paper}_items` before export: empty/malformed/duplicate items and items a "
                    "text-only model answers without the image (stage `blind_solver`) are dropped; correct-option "
                    "positions re-balanced per split. Tables `gated_items`, `gate_results`.",
    )
    def _gated(context: dg.AssetExecutionContext, config: GateConfigRun, storage: StorageResource,
               llm: LLMResource) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        run_cfg = json.loads(json.dumps(cfg))
        run_cfg.setdefault("blind", {}).update(enabled=config.blind_enabled, drop=config.blind_drop)
        tables, rej, md, checks = run_gates(storage.store, paper, run_cfg, llm)
        res = publish(storage.store, {"gated_items": {paper: tables["gated_items"]},
                                      "gate_results": {paper: tables["gate_results"]}},
                      rejects=[rej], metadata=md, asset_key=context.asset_key, started=t0)
        return dg.MaterializeResult(asset_key=context.asset_key, metadata=res.metadata,
                                    check_results=[*res.check_results, *checks])

    class ExportConfigRun(dg.Config):
        force_stub: bool = bool((cfg.get("export") or {}).get("force_stub", False))

    @dg.asset(
        name=export_key, group_name="splits", kinds={"python", "parquet"}, deps=[gated_key],
        code_version=content_hash(VERSION, cfg.get("export"), files=[BLIND_PROMPT]),
        check_specs=contract_check_specs(export_key, ["exports"]) + [
            dg.AssetCheckSpec("export_no_stub", asset=export_key,
                              description="No item made by the stub backend (refused unless force_stub)."),
            dg.AssetCheckSpec("export_integrity", asset=export_key,
                              description="Every file of every version still matches its manifest sha256 (immutability).")],
        metadata=table_metadata(["exports"]),
        description=f"Immutable versioned export of the gated {paper} items to data/exports/{paper}/v<N>/ "
                    "(JSONL + Parquet + media + provenance + dataset card), loadable with datasets.load_dataset.",
    )
    def _export(context: dg.AssetExecutionContext, config: ExportConfigRun, storage: StorageResource) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        frame, md, checks = run_export(storage.store, paper, cfg, config.force_stub)
        if md.get("status") == "refused":   # a refused export is a failed step, not a green run
            raise dg.Failure(description=str(md.get("note", f"{paper} export refused")),
                             metadata={"stub_items": md.get("stub_items", 0)})
        res = publish(storage.store, {"exports": {paper: frame}}, metadata=md, asset_key=context.asset_key, started=t0)
        return dg.MaterializeResult(asset_key=context.asset_key, metadata=res.metadata,
                                    check_results=[*res.check_results, *checks])

    return dg.Definitions(assets=[_splits, _gated, _export], asset_checks=[_leak])

