"""Per-benchmark settings of the splits / gates / export stage (``config/splits.yaml``).

Merged in this order, later wins: the file's ``defaults``, the recipe's own ``splits:``
block in ``config/recipes/<paper>.yaml`` (II-Bench keeps its paper sizes there), then
``benchmarks.<paper>`` in ``config/splits.yaml``.
"""

from __future__ import annotations

import copy
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
SPLITS_CONFIG = ROOT / "config" / "splits.yaml"
RECIPES_CONFIG = ROOT / "config" / "recipes"
BENCHMARKS = ("maia", "vague", "vimu", "iibench", "hummus")
REST = "rest"
# Keys of a recipe's ``splits:`` block that are not split sizes.
_NON_SIZE_KEYS = {"unit", "group_by", "seed", "sizes", "leakage_keys", "near_duplicate", "gates", "blind", "export"}


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for k, v in (over or {}).items():
        if isinstance(v, dict) and isinstance(out.get(k), dict) and k != "sizes":
            out[k] = deep_merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def _recipe_block(benchmark: str, recipes_dir: Path) -> dict[str, Any]:
    path = recipes_dir / f"{benchmark}.yaml"
    if not path.exists():
        return {}
    block = (yaml.safe_load(path.read_text()) or {}).get("splits") or {}
    out = {k: v for k, v in block.items() if k in _NON_SIZE_KEYS - {"unit", "group_by"}}
    sizes = {k: v for k, v in block.items() if k not in _NON_SIZE_KEYS}
    if sizes:
        out["sizes"] = sizes
    # Recorded for the card only: leakage grouping always uses `leakage_keys`.
    if "unit" in block or "group_by" in block:
        out["recipe_note"] = {k: block[k] for k in ("unit", "group_by") if k in block}
    return out


def benchmark_config(benchmark: str, path: Path = SPLITS_CONFIG, recipes_dir: Path = RECIPES_CONFIG) -> dict[str, Any]:
    doc = yaml.safe_load(path.read_text()) or {}
    cfg = deep_merge(doc.get("defaults") or {}, _recipe_block(benchmark, recipes_dir))
    cfg = deep_merge(cfg, (doc.get("benchmarks") or {}).get(benchmark) or {})
    if os.environ.get("SUBTEXT_EXPORT_FORCE_STUB", "").strip().lower() in ("1", "true", "yes"):
        cfg.setdefault("export", {})["force_stub"] = True
    return cfg


@dataclass(frozen=True)
class SplitSizes:
    """Split names in order with their target: an int (items), a fraction, or ``rest``."""

    sizes: tuple[tuple[str, int | float | str], ...]

    @classmethod
    def parse(cls, raw: dict[str, Any]) -> SplitSizes:
        if not raw:
            raise ValueError("no split sizes configured")
        out = []
        rests = 0
        for name, v in raw.items():
            if isinstance(v, str):
                if v.strip().lower() != REST:
                    raise ValueError(f"split {name}: size must be an int, a fraction or 'rest', not {v!r}")
                rests += 1
                out.append((str(name), REST))
            elif isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
                raise ValueError(f"split {name}: bad size {v!r}")
            elif isinstance(v, float) and v < 1:
                out.append((str(name), float(v)))
            else:
                out.append((str(name), int(v)))
        if rests > 1:
            raise ValueError("at most one split may be 'rest'")
        return cls(tuple(out))

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.sizes]

    def targets(self, n: int) -> dict[str, float]:
        """Target item counts for ``n`` items (fixed sizes first, fractions, then the rest)."""
        t: dict[str, float] = {}
        for name, v in self.sizes:
            if isinstance(v, int):
                t[name] = float(v)
            elif isinstance(v, float):
                t[name] = v * n
        fixed = sum(t.values())
        if fixed > n and fixed > 0:  # not enough items: shrink every split proportionally
            t = {k: v * n / fixed for k, v in t.items()}
        for name, v in self.sizes:
            if v == REST:
                t[name] = max(0.0, n - sum(t.values()))
        if not any(v == REST for _, v in self.sizes):
            # No `rest`: fractions may not sum to 1 — scale so every item lands somewhere.
            total = sum(t.values())
            t = {k: (v * n / total if total else n / len(t)) for k, v in t.items()}
        return {name: t[name] for name, _ in self.sizes}


@dataclass(frozen=True)
class BlindConfig:
    enabled: bool = True
    trials: int = 5
    temperature: float = 0.7
    alpha: float = 0.05
    min_accuracy: float = 0.6
    drop: bool = True
    max_items: int | None = None
    min_coverage: float = 0.9   # answered trials / trials asked below this → the gate fails (an outage is no pass)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> BlindConfig:
        d = d or {}
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


@dataclass(frozen=True)
class GateConfig:
    position_tolerance: float = 0.02
    rebalance_positions: bool = True
    max_length_excess: float = 0.15
    duplicate_option_threshold: float = 0.9
    check_media_files: bool = True
    blind: BlindConfig = field(default_factory=BlindConfig)

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> GateConfig:
        g = cfg.get("gates") or {}
        kw = {k: g[k] for k in ("position_tolerance", "rebalance_positions", "max_length_excess",
                                "duplicate_option_threshold", "check_media_files") if k in g}
        return cls(**kw, blind=BlindConfig.from_dict(cfg.get("blind")))
