"""Agreement of each human protocol step (table ``protocol_agreement``; docs/operations.md "Ready
queries"): per step and answer field, Fleiss' kappa (``forge.people.agreement.fleiss``) over the
units two or more people answered. Dagster-free.

What counts: each person's latest answer on a unit (by ``created_at``, then ``answer_id``); refused
answers, excluded annotators and control units are left out. A value is compared whole, as its JSON
text: a rating, a choice, a list of choices; a field of boxes (a list of objects) has no agreement,
and a text field agrees only when equal. With more people on some units than others, each unit's
agreement uses its own count (see ``forge.people.agreement``).
"""

from __future__ import annotations

import json
from typing import Any

import pandas as pd

from forge.people import agreement

AGREEMENT = "protocol_agreement"
AGREEMENT_COLUMNS = [
    "benchmark", "step", "field", "units", "most_people", "observed_agreement", "chance_agreement", "fleiss_kappa",
]  # fmt: skip


def _boxes(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and isinstance(value[0], dict)


def field_rows(answers: pd.DataFrame) -> pd.DataFrame:
    """The counted answers as agreement rows, one per field: benchmark, step, field, unit, person,
    value (the field's JSON text)."""
    a = answers[answers["refused"].isna() & answers["excluded"].isna() & answers["values"].notna()]
    a = a[~a["control"].fillna(False).astype(bool)]
    a = a.sort_values(["created_at", "answer_id"], na_position="first")
    a = a.drop_duplicates(["benchmark", "step", "unit_id", "person"], keep="last")
    rows = []
    for r in a.itertuples(index=False):
        values = json.loads(r.values) if isinstance(r.values, str) else r.values
        for name, value in (values or {}).items():
            if not _boxes(value):
                text = json.dumps(value, sort_keys=True, ensure_ascii=False)
                rows.append((r.benchmark, r.step, name, str(r.unit_id), str(r.person), text))
    return pd.DataFrame(rows, columns=["benchmark", "step", "field", *agreement.COLUMNS])


def step_agreement(answers: pd.DataFrame) -> pd.DataFrame:
    """``protocol_agreement`` rows of ``answers`` (rows of ``protocol_answers``, any benchmarks and
    steps): one per benchmark, step and field that has a unit two or more people answered."""
    out = []
    for (benchmark, step, name), g in field_rows(answers).groupby(["benchmark", "step", "field"], sort=True):
        f = agreement.fleiss(g[agreement.COLUMNS])
        if f.units:
            out.append((benchmark, step, name, f.units, f.most_people, f.observed, f.chance, f.kappa))
    return pd.DataFrame(out, columns=AGREEMENT_COLUMNS).astype(
        {c: "int64" for c in ("units", "most_people")} | {c: "float64" for c in AGREEMENT_COLUMNS[5:]}
    )
