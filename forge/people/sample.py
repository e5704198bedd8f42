"""The people loop's one seeded sample: which units people are asked about (a protocol step's
``StepSample``, the blind baseline's subset, the judge validation's answers). Dagster-free.

Each unit gets a draw in [0, 1) from a hash of the seed and its own id, so a unit's draw never
depends on the other units or their order: a share keeps the units whose draw is below it (a unit's
membership never changes when others arrive), a count takes the lowest draws (a larger count keeps
every unit of a smaller one).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def draw(seed: str, unit: str) -> float:
    """The unit's seeded draw in [0, 1)."""
    return int(hashlib.sha1(f"{seed}:{unit}".encode()).hexdigest()[:12], 16) / 16**12


def pick(units: Iterable[str], seed: str, share: float | None = None, count: int | None = None) -> set[str]:
    """The units drawn: those whose draw is below ``share``, or the ``count`` lowest draws (ties,
    which a 48-bit draw all but never has, by unit id); every unit when neither is given."""
    if share is not None and count is not None:
        raise ValueError("a sample takes a share or a count, not both")
    if share is not None and not 0 < share <= 1:
        raise ValueError(f"sample share must be in (0, 1], got {share}")
    if count is not None and count < 1:
        raise ValueError(f"sample count must be at least 1, got {count}")
    units = sorted(set(map(str, units)))
    if share is not None:
        return {u for u in units if draw(seed, u) < share}
    if count is not None:
        return set(sorted(units, key=lambda u: draw(seed, u))[:count])
    return set(units)


def subset(units: Iterable[str], size: int | None, seed: int | str = 0) -> list[str]:
    """``size`` units drawn by ``pick`` (seed ``str(seed)``), sorted; every unit when ``size`` is
    None or not below their number."""
    units = sorted(set(map(str, units)))
    if size is None or size >= len(units):
        return units
    if size < 1:
        raise ValueError(f"the sample size must be at least 1, got {size}")
    return sorted(pick(units, str(seed), count=size))
