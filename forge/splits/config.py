"""Per-benchmark settings of the splits / gates / export stage (``config/splits.yaml``).

Merged in this order, later wins: the file's ``defaults``, the benchmark spec's paper
policies (``assets/recipes/<name>/spec.py``: split sizes, blind action and trials), the
recipe's own ``splits:`` block in its recipe config (a paper with fixed split sizes
keeps them there), then ``benchmarks.<name>`` in ``config/splits.yaml``. Two policies are the
paper's and no config overrides them: the option policy (fixed-order options never move)
and the blind unit (item or pool).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from forge.benchmarks.review_settings import review_spec
from forge.benchmarks.review_spec import ReviewSpec
from forge.benchmarks.settings import active_profile, effective, merge
from forge.benchmarks.spec import BenchmarkSpec, BlindAction, BlindUnit, OptionPolicy
from forge.storage.yaml_files import read_yaml

ROOT = Path(__file__).resolve().parents[2]
SPLITS_CONFIG = ROOT / "config" / "splits.yaml"
REST = "rest"
# Keys of a recipe's ``splits:`` block that are not split sizes.
_NON_SIZE_KEYS = {"unit", "group_by", "seed", "sizes", "leakage_keys", "near_duplicate", "gates", "blind", "export"}


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    # split sizes replace as a whole: a benchmark's sizes never inherit another's keys
    return merge(base, over, replace=("sizes",))


def _recipe_block(spec: BenchmarkSpec) -> dict[str, Any]:
    path = spec.recipe_config_path()
    if path is None or not path.exists():
        return {}
    doc = effective(read_yaml(path) or {}, active_profile(spec.name), str(path))
    block = doc.get("splits") or {}
    out = {k: v for k, v in block.items() if k in _NON_SIZE_KEYS - {"unit", "group_by"}}
    sizes = {k: v for k, v in block.items() if k not in _NON_SIZE_KEYS}
    if sizes:
        out["sizes"] = sizes
    # Recorded for the card only: leakage grouping always uses `leakage_keys`.
    if "unit" in block or "group_by" in block:
        out["recipe_note"] = {k: block[k] for k in ("unit", "group_by") if k in block}
    return out


def spec_block(spec: BenchmarkSpec) -> dict[str, Any]:
    """The spec's paper policies as a config block (merged under the recipe and the file)."""
    blind: dict[str, Any] = {"action": str(spec.blind.action)}
    if spec.blind.trials is not None:
        blind["trials"] = spec.blind.trials
    out: dict[str, Any] = {"blind": blind}
    if spec.split.sizes:
        out["sizes"] = dict(spec.split.sizes)
    return out


def benchmark_config(spec: BenchmarkSpec, path: Path = SPLITS_CONFIG) -> dict[str, Any]:
    """The merged settings document of ``spec`` (see the module's docstring for the order)."""
    doc = read_yaml(path) or {}
    cfg = deep_merge(doc.get("defaults") or {}, spec_block(spec))
    cfg = deep_merge(cfg, _recipe_block(spec))
    cfg = deep_merge(cfg, (doc.get("benchmarks") or {}).get(spec.name) or {})
    # The paper's policies, not settings: recorded in the config (and so in code versions and cards).
    cfg["options"] = str(spec.options)
    cfg.setdefault("blind", {})["unit"] = str(spec.blind.unit)
    cfg["unit_key"] = spec.split.unit_key
    if os.environ.get("SUBTEXT_EXPORT_FORCE_STUB", "").strip().lower() in ("1", "true", "yes"):
        cfg.setdefault("export", {})["force_stub"] = True
    return cfg


@dataclass(frozen=True)
class SplitSizes:
    """Split names in order with their target: an int (items), a fraction, or ``rest``."""

    sizes: tuple[tuple[str, int | float | str], ...]
    # A `rest` split keeps at least this share of the items when the fixed sizes would take
    # more (a small corpus: fixed 15 + 20 of 10 demo items); at paper scale it never binds.
    min_rest_share: float = 0.0

    @classmethod
    def parse(cls, raw: dict[str, Any], min_rest_share: float = 0.0) -> SplitSizes:
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
        if not 0 <= min_rest_share < 1:
            raise ValueError(f"min_rest_share must be in [0, 1), not {min_rest_share}")
        return cls(tuple(out), float(min_rest_share))

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> SplitSizes:
        return cls.parse(cfg["sizes"], float(cfg.get("min_rest_share") or 0.0))

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
        has_rest = any(v == REST for _, v in self.sizes)
        room = n * (1 - self.min_rest_share) if has_rest else n
        if fixed > room and fixed > 0:  # not enough items: shrink every fixed split proportionally
            t = {k: v * room / fixed for k, v in t.items()}
        for name, v in self.sizes:
            if v == REST:
                t[name] = max(0.0, n - sum(t.values()))
        if not any(v == REST for _, v in self.sizes):
            # No `rest`: fractions may not sum to 1 — scale so every item lands somewhere.
            total = sum(t.values())
            t = {k: (v * n / total if total else n / len(t)) for k, v in t.items()}
        return {name: t[name] for name, _ in self.sizes}


@lru_cache(maxsize=4096)
def _p_greater(correct: int, trials: int, chance: float) -> float:
    """One-sided binomial p-value (few distinct arguments: the probe asks it per unit and round)."""
    from scipy.stats import binomtest  # imported on use: scipy.stats is slow to import

    return float(binomtest(correct, trials, chance, alternative="greater").pvalue)


@dataclass(frozen=True)
class BlindConfig:
    # report: the text-only probe measures and reports (no paper filters on it); drop is opt-in
    action: BlindAction = BlindAction.REPORT
    unit: BlindUnit = BlindUnit.ITEM
    trials: int = 5
    temperature: float = 0.7
    alpha: float = 0.05
    min_accuracy: float = 0.6
    max_items: int | None = None
    min_coverage: float = 0.9  # answered trials / trials asked below this → the gate fails (an outage is no pass)
    # Stop asking a unit once its verdict (flagged or not) can no longer change; false: every trial
    # is asked (an unbiased accuracy over `trials` samples, at full cost).
    early_stop: bool = True

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> BlindConfig:
        d = dict(d or {})
        # Older configs: `enabled: false` → off, `drop: false` → report.
        if "action" not in d and ("enabled" in d or "drop" in d):
            d["action"] = "off" if not d.get("enabled", True) else "drop" if d.get("drop", True) else "report"
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        kw["action"] = BlindAction(kw.get("action", BlindAction.REPORT))
        kw["unit"] = BlindUnit(kw.get("unit", BlindUnit.ITEM))
        if int(kw.get("trials", 5)) < 1:
            raise ValueError("blind.trials must be at least 1")
        return cls(**kw)

    @property
    def enabled(self) -> bool:
        return self.action != BlindAction.OFF

    @property
    def drop(self) -> bool:
        return self.action == BlindAction.DROP

    def flags(self, correct: int, trials: int, chance: float) -> bool:
        """The test: one-sided binomial p < alpha against chance and accuracy ≥ min_accuracy."""
        if trials <= 0 or correct / trials < self.min_accuracy:
            return False
        return _p_greater(correct, trials, chance) < self.alpha

    def decided(self, correct: int, answered: int, remaining: int, chance: float) -> bool:
        """Whether the verdict of a unit with ``correct`` of ``answered`` trials right can still
        change over ``remaining`` more trials (the test is monotone in the number right)."""
        n = answered + remaining
        return remaining <= 0 or self.flags(correct, n, chance) == self.flags(correct + remaining, n, chance)

    def guess_drop_probability(self, chance: float) -> float:
        """Probability that a pure guesser (right with probability ``chance`` per trial) is
        flagged: the false-positive rate of the test for a unit with that chance."""
        from scipy.stats import binom

        return float(
            sum(binom.pmf(c, self.trials, chance) for c in range(self.trials + 1) if self.flags(c, self.trials, chance))
        )


@dataclass(frozen=True)
class ImportedPolicy:
    """What the gates may do to items of a published release (``origin = imported``). All off
    (the default): the release reaches export and evaluation as published. Each is a named
    opt-in (``gates.imported.<name>`` in config/splits.yaml) that the dataset card states."""

    rebalance_positions: bool = False  # re-letter their options with the position gate
    drop_duplicates: bool = False  # drop them in the duplicates gate
    drop_blind_solvable: bool = False  # drop them when flagged text-solvable (needs blind.action: drop)
    drop_field_problems: bool = False  # drop them for empty fields / contract problems (missing media always drops)
    review: bool = False  # hold them for human review (docs/review.md) like built items; off: the paper's review stands

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> ImportedPolicy:
        d = dict(d or {})
        unknown = set(d) - set(cls.__dataclass_fields__)
        if unknown:
            raise ValueError(
                f"gates.imported: unknown option(s) {sorted(unknown)}; known: {sorted(cls.__dataclass_fields__)}"
            )
        return cls(**{k: bool(v) for k, v in d.items()})

    def enabled(self) -> list[str]:
        return [k for k in self.__dataclass_fields__ if getattr(self, k)]


@dataclass(frozen=True)
class GateConfig:
    position_tolerance: float = 0.02
    rebalance_positions: bool = True  # only where the option policy is `balance`
    max_length_excess: float = 0.15
    duplicate_option_threshold: float = 0.9
    check_media_files: bool = True
    blind: BlindConfig = field(default_factory=BlindConfig)
    imported: ImportedPolicy = field(default_factory=ImportedPolicy)

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> GateConfig:
        g = cfg.get("gates") or {}
        kw = {
            k: g[k]
            for k in (
                "position_tolerance",
                "rebalance_positions",
                "max_length_excess",
                "duplicate_option_threshold",
                "check_media_files",
            )
            if k in g
        }
        if cfg.get("options") == OptionPolicy.FIXED:
            kw["rebalance_positions"] = False  # fixed-order options never move, whatever the config says
        imported = ImportedPolicy.from_dict(g.get("imported"))
        return cls(**kw, blind=BlindConfig.from_dict(cfg.get("blind")), imported=imported)


@dataclass(frozen=True)
class ExportSettings:
    force_stub: bool = False  # export stub-made items anyway (the card says so); a run flag too
    copy_media: bool = True  # copy media files into the export folder


@dataclass(frozen=True)
class StageSettings:
    """One benchmark's splits / gates / export settings, parsed once where the spec is resolved
    (the asset factories) and passed down whole; every setting a stage uses is a typed field.
    ``document`` is the merged document as read, kept only as the record: the stages' code
    versions hash slices of it (``version_slice``) and the export records it (``recorded``)."""

    sizes: SplitSizes
    gates: GateConfig
    export: ExportSettings
    seed: int
    unit_key: str | None  # the unit a split never divides (the spec's)
    options: str | None  # the option policy (the spec's)
    leakage_keys: tuple[str, ...]  # empty: every kind (forge/splits/leakage.py KEY_KINDS)
    phash_threshold: int
    document: dict[str, Any] = field(repr=False, compare=False)
    # the review settings in effect (the declaration, config/review.yaml, SUBTEXT_REVIEW_POLICY);
    # None: settings parsed without them (a splits or gates test), refused by a stage that needs them
    review: ReviewSpec | None = None

    @classmethod
    def parse(cls, doc: dict[str, Any], review: ReviewSpec | None = None) -> StageSettings:
        ex = doc.get("export") or {}
        return cls(
            sizes=SplitSizes.from_config(doc),
            gates=GateConfig.from_config(doc),
            export=ExportSettings(bool(ex.get("force_stub", False)), bool(ex.get("copy_media", True))),
            seed=int(doc.get("seed", 0)),
            unit_key=doc.get("unit_key"),
            options=doc.get("options"),
            leakage_keys=tuple(doc.get("leakage_keys") or ()),
            phash_threshold=int((doc.get("near_duplicate") or {}).get("phash_threshold", 8)),
            document=doc,
            review=review,
        )

    def version_slice(self, stage: str) -> dict[str, Any]:
        """The part of the document a stage's code version hashes (``split``, ``gate``, ``export``;
        the export's leaves out ``force_stub``, a run flag and not logic)."""
        d = self.document
        if stage == "export":
            return {k: v for k, v in (d.get("export") or {}).items() if k != "force_stub"}
        keys = _VERSION_KEYS[stage]
        return {k: d.get(k) for k in keys}

    def recorded(self) -> dict[str, Any]:
        """A JSON copy of the document (the export's recorded configuration)."""
        return json.loads(json.dumps(dict(self.document), default=str))

    def review_settings(self) -> ReviewSpec:
        """The review settings in effect; an error where these settings were parsed without them."""
        if self.review is None:
            raise ValueError("these stage settings carry no review settings: make them with stage_settings(spec)")
        return self.review

    def with_blind_action(self, action: str) -> StageSettings:
        """These settings under a run's own blind action (the gated asset's run config)."""
        if action == str(self.gates.blind.action):
            return self
        doc = self.recorded()
        doc.setdefault("blind", {})["action"] = action
        return StageSettings.parse(doc, self.review)


_VERSION_KEYS = {
    "split": ("seed", "sizes", "min_rest_share", "leakage_keys", "near_duplicate"),
    "gate": ("gates", "blind", "seed", "options", "unit_key"),
}


def stage_settings(spec: BenchmarkSpec, path: Path = SPLITS_CONFIG) -> StageSettings:
    """``spec``'s settings: its settings document, parsed, and its review settings in effect. The one
    place either is resolved: callers pass the result down whole."""
    return StageSettings.parse(benchmark_config(spec, path), review_spec(spec.name, spec.review))
