"""Agreement between people: the one module every client of the people loop measures with, thin
wrappers over the maintained libraries. Dagster-free.

One input shape: long rows ``unit, person, value`` (``long_rows`` picks them out of any frame), one
per answer; where a person answered a unit more than once, their last row counts. Values are nominal
and compared whole (a rating, a choice, a list of choices as one value), so they must be hashable.

* ``alpha``: Krippendorff's alpha, nominal (``krippendorff``), over the units two or more people
  answered; it handles people who did not see every unit. Item review measures with it.
* ``fleiss``: Fleiss' kappa over the units two or more people answered. With the same number of
  people on every unit it is ``statsmodels.stats.inter_rater.fleiss_kappa``; statsmodels refuses
  unequal numbers, and then each unit's agreement uses the unit's own count, as Fleiss (1971, eq. 2)
  defines it per subject (the chance term pools every answer), which equals statsmodels' figure
  whenever the counts are equal (tests/people/test_agreement.py). Protocol steps and judge
  validation measure with it.
* ``cohen``: Cohen's kappa of two people over the units both answered
  (``sklearn.metrics.cohen_kappa_score``). Judge validation measures each person against the judge.

Figures are rounded to four places; a figure that is undefined (no unit, every value the same)
is None.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import krippendorff
import numpy as np
import pandas as pd

COLUMNS = ["unit", "person", "value"]
DIGITS = 4


def long_rows(frame: pd.DataFrame, unit: str, person: str, value: str) -> pd.DataFrame:
    """``frame``'s ``unit``, ``person`` and ``value`` columns as the long rows every measure takes
    (other columns kept, e.g. a category to group by)."""
    missing = {unit, person, value} - set(frame.columns)
    if missing:
        raise ValueError(f"agreement rows need the columns {sorted(missing)}")
    rest = [c for c in frame.columns if c not in {unit, person, value, *COLUMNS}]
    return frame[[unit, person, value, *rest]].set_axis([*COLUMNS, *rest], axis=1)


def _last(rows: pd.DataFrame, at_least: int = 2) -> pd.DataFrame:
    """Each person's last value per unit, on the units ``at_least`` people answered."""
    missing = set(COLUMNS) - set(rows.columns)
    if missing:
        raise ValueError(f"agreement rows need the columns {sorted(missing)} (long_rows makes them)")
    r = rows[rows["value"].notna()].drop_duplicates(["unit", "person"], keep="last")
    return r[r.groupby("unit")["person"].transform("size") >= at_least]


def _figure(v: float) -> float | None:
    return None if v is None or np.isnan(v) else round(float(v), DIGITS)


@dataclass(frozen=True)
class Alpha:
    alpha: float | None
    units: int  # units two or more people answered
    people: int  # people with a value on those units
    note: str | None = None  # why alpha is None


def alpha(rows: pd.DataFrame) -> Alpha:
    """Krippendorff's alpha (nominal); None with a note when fewer than two units were answered by
    two or more people, or every value is the same (agreement is total but alpha undefined)."""
    r = _last(rows)
    units = int(r["unit"].nunique())
    if units < 2:
        note = "fewer than two units answered by two or more people"
        return Alpha(None, units, int(r["person"].nunique()), note)
    codes = r.assign(code=pd.factorize(r["value"])[0].astype(float))  # nominal: any coding of the values
    data = codes.pivot(index="person", columns="unit", values="code").to_numpy(dtype=float)
    try:
        value = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    except ValueError as exc:  # one value in the domain
        return Alpha(None, units, data.shape[0], f"undefined: {exc}")
    return Alpha(_figure(value), units, data.shape[0])


def alpha_by(rows: pd.DataFrame, column: str) -> dict[str, Alpha]:
    """Alpha per value of ``column`` (a category of the unit), sorted by it."""
    return {str(c): alpha(g) for c, g in rows.groupby(column, sort=True)}


@dataclass(frozen=True)
class Fleiss:
    kappa: float | None
    units: int  # units two or more people answered
    most_people: int  # the most people on one unit
    observed: float | None  # mean per-unit agreement
    chance: float | None  # agreement expected by chance from the pooled value shares


def fleiss(rows: pd.DataFrame) -> Fleiss:
    """Fleiss' kappa over the units two or more people answered (see the module's note on unequal
    numbers of people)."""
    from statsmodels.stats.inter_rater import fleiss_kappa  # here: loading definitions stays fast

    r = _last(rows)
    if r.empty:
        return Fleiss(None, 0, 0, None, None)
    table = pd.crosstab(r["unit"], r["value"]).to_numpy(dtype=float)  # units × values: counts
    n = table.sum(axis=1)
    observed = float((((table * table).sum(axis=1) - n) / (n * (n - 1))).mean())
    shares = table.sum(axis=0) / table.sum()
    chance = float((shares * shares).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        if (n == n[0]).all():
            kappa = float(fleiss_kappa(table, method="fleiss"))
        else:
            kappa = (observed - chance) / (1 - chance) if chance < 1 else float("nan")
    return Fleiss(_figure(kappa), len(table), int(n.max()), _figure(observed), _figure(chance))


@dataclass(frozen=True)
class Cohen:
    kappa: float | None
    units: int  # units both people answered


def cohen(rows: pd.DataFrame, a: str, b: str, labels: Sequence[str] | None = None) -> Cohen:
    """Cohen's kappa of persons ``a`` and ``b`` over the units both answered (``labels``: the
    values counted, as scikit-learn takes them; None: every value either gave)."""
    from sklearn.metrics import cohen_kappa_score  # here: loading definitions stays fast

    r = _last(rows[rows["person"].isin([a, b])])
    pair = r.pivot(index="unit", columns="person", values="value")
    if pair.empty:
        return Cohen(None, 0)
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # one label throughout: kappa undefined, said by None
        kappa = float(cohen_kappa_score(pair[a], pair[b], labels=None if labels is None else list(labels)))
    return Cohen(_figure(kappa), len(pair))
