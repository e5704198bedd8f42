"""One importer asset and one side-by-side report asset per paper.

* ``<paper>_release`` (group ``releases``, dynamic partitions ``<paper>_releases``: one per
  release, added by ``release_sensor`` from ``config/releases.yaml`` and the inbox): runs the
  paper's ``parse_release`` (``assets/recipes/<paper>/logic/release.py``), places the released media
  under ``<data>/media/releases/``, and writes the items into the recipe's own table
  ``<paper>_items`` as the partition file ``release__<name>`` (``origin = imported``), so
  splits, gates, exports and evaluations take them like built items. Rejects go to
  ``rejects`` (stage ``<paper>_release``) with their reason.
* ``<paper>_release_report``: the built set next to every imported release
  (``forge.releases.compare``): a markdown table and a PNG (also under
  ``<data>/reports/releases/``) in the materialization's metadata.
"""

import time
from collections.abc import Callable, Mapping
from pathlib import Path

import dagster as dg

from assets.automation import REPORT
from assets.common import (
    SINGLE_RUN,
    contract_check_specs,
    item_sheet,
    partition_keys,
    publish,
    table_metadata,
    table_preview,
)
from assets.releases.keys import PARTITIONS, release_key, report_key
from forge.releases import compare, report
from forge.releases.config import ReleaseInfo, release_info
from forge.releases.records import ParsedRelease, batch_part, place_media
from forge.storage import RejectLog
from forge.storage.contracts import load_contract
from resources.storage import StorageResource

Parser = Callable[[ReleaseInfo], ParsedRelease]
Finisher = Callable[[ParsedRelease, Path], object]  # media work after placing files (e.g. MAIA's frames)


class ReleaseRunConfig(dg.Config):
    releases_config: str | None = None  # another releases file than config/releases.yaml


def release_defs(
    paper: str,
    parse: Parser,
    reference: Callable[[], Mapping[str, float]] | None = None,
    built_language: str = "en",
    finish: Finisher | None = None,
) -> dg.Definitions:
    table = f"{paper}_items"
    key = release_key(paper)

    @dg.asset(
        name=key,
        group_name="releases",
        kinds={"python", "parquet"},
        partitions_def=PARTITIONS[paper],
        backfill_policy=SINGLE_RUN,
        check_specs=contract_check_specs(key, [table]),
        metadata=table_metadata([table]),
        description=f"Import a published {paper} release (one partition per release in config/releases.yaml or "
        f"<data>/inbox/_releases/{paper}/<name>/) into `{table}` with origin = imported; rejects with reasons.",
    )
    def _release(
        context: dg.AssetExecutionContext, config: ReleaseRunConfig, storage: StorageResource
    ) -> dg.MaterializeResult:
        t0 = time.perf_counter()
        store = storage.store
        parts, logs, md, per_release = {}, [], {}, {}
        for name in partition_keys(context):
            info = release_info(paper, name, config.releases_config, store.data_dir)
            parsed = parse(info)
            md[f"{name}/release"] = dg.MetadataValue.json(info.describe())
            md[f"{name}/media_placed"] = place_media(parsed.media, store.data_dir)
            if finish is not None:
                md[f"{name}/media_processed"] = finish(parsed, store.data_dir)
            if info.licence == "unspecified":
                context.log.warning(f"{paper} release {name}: no licence declared (config or release.yaml)")
            md[f"{name}/summary"] = dg.MetadataValue.json(parsed.summary())
            # offered vs imported per unit, reject reasons with examples, the release next to the paper
            text = report.markdown(parsed, f"{paper} release {name}")
            md[f"{name}/report"] = dg.MetadataValue.md(text)
            reports = store.data_dir / "reports" / "releases"
            reports.mkdir(parents=True, exist_ok=True)
            (reports / f"{paper}__{name}__import.md").write_text(text)  # shown again by the side-by-side report
            log = RejectLog(key, name)
            for r in parsed.rejects:
                log.add(r.record, r.reason, detail=r.detail)
            logs.append(log)
            parts[batch_part(name)] = parsed.items
            # the table's part is not the partition key: say per release what it holds
            per_release[name] = {
                "dagster/row_count": len(parsed.items),
                "preview": table_preview(parsed.items, load_contract(table)),
                "summary": md[f"{name}/summary"],
                "report": md[f"{name}/report"],
                "contact_sheet": item_sheet(parsed.items, store.data_dir, f"{paper} release {name}"),
            }
            context.log.info(f"{paper} release {name}: {len(parsed.items)} items, {len(parsed.rejects)} rejects")
        return publish(
            store,
            {table: parts},
            rejects=logs,
            metadata=md,
            started=t0,
            context=context,
            part_metadata=per_release,
        )

    @dg.asset(
        name=report_key(paper),
        group_name="releases",
        kinds={"python"},
        deps=[key, table],
        automation_condition=REPORT,
        description=f"{paper}: the built set next to every imported release — label and category distributions, "
        "pool overlap and TTR, option position and length bias, question length — as a table and a plot.",
    )
    def _report(context: dg.AssetExecutionContext, storage: StorageResource) -> dg.MaterializeResult:
        store = storage.store
        items = store.read(table) if store.exists(table) else None
        if items is None or items.empty:
            return dg.MaterializeResult(metadata={"note": f"no `{table}` rows yet"})
        langs = {compare.BUILT: built_language}
        langs |= {f"release:{r.name}": r.language for r in _releases(paper, store.data_dir)}
        table_df = compare.side_by_side(items, langs, reference() if reference else None)
        out = store.data_dir / "reports" / "releases"
        out.mkdir(parents=True, exist_ok=True)
        table_df.to_csv(out / f"{paper}_side_by_side.csv")
        png = compare.plot(items, out / f"{paper}_side_by_side.png", f"{paper}: built vs published release")
        md_text = compare.markdown(table_df)
        md: dict = {
            "side_by_side": dg.MetadataValue.md(md_text),
            "sides": dg.MetadataValue.json(list(table_df.columns)),
            "table_csv": dg.MetadataValue.path(str(out / f"{paper}_side_by_side.csv")),
        }
        for f in sorted(out.glob(f"{paper}__*__import.md")):  # each release's import report, paper's table included
            name = f.name.removeprefix(f"{paper}__").removesuffix("__import.md")
            md[f"import/{name}"] = dg.MetadataValue.md(f.read_text())
        drift = compare.drift(table_df)
        if len(drift):
            md["largest_drift"] = dg.MetadataValue.json({k: round(float(v), 4) for k, v in drift.nlargest(5).items()})
        if png is not None:
            md["plot"] = dg.MetadataValue.md(f"![{paper} side by side]({compare.data_url(png)})")
            md["plot_path"] = dg.MetadataValue.path(str(png))
        return dg.MaterializeResult(metadata=md)

    return dg.Definitions(assets=[_release, _report])


def _releases(paper: str, data_dir) -> list[ReleaseInfo]:
    from forge.releases.config import load_releases

    try:
        return [r for r in load_releases(data_dir=data_dir) if r.paper == paper]
    except Exception:  # noqa: BLE001 - a broken config must not hide the report; languages fall back to the items
        return []
