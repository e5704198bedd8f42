"""The reject-reason registry (tests/foundation/rejects_registry.py and each paper's assets/recipes/<paper>/rejects.py) matches the code: every reason a reject
site can write is declared, every declared reason is written somewhere, and each reason's covering
test exists and names it. The scan is tests/foundation/reject_scan.py."""

from __future__ import annotations

import re

import pytest

from tests.foundation import rejects_registry as R
from tests.foundation.reject_scan import ROOT, scan


@pytest.fixture(scope="module")
def scanned():
    return scan()


def test_every_computed_reject_site_is_known(scanned):
    _, unknown = scanned
    assert not unknown, (
        f"reject sites with a computed reason the scan cannot follow (list them in FORWARDED): {unknown}"
    )


def test_every_emitted_reason_is_declared(scanned):
    emitted, _ = scanned
    undeclared = {code: sorted(where) for code, where in emitted.items() if code not in R.declared()}
    assert not undeclared, (
        f"declare these in tests/foundation/rejects_registry.py and each paper's assets/recipes/<paper>/rejects.py: {undeclared}"
    )


def test_every_declared_reason_is_emitted(scanned):
    emitted, _ = scanned
    stale = {(stage, code) for stage, reasons in R.STAGES.items() for code in reasons if code not in emitted}
    assert not stale, f"declared but no code writes them: {sorted(stale)}"


def test_covering_tests_exist_and_name_their_reason():
    bad = []
    for stage, reasons in R.STAGES.items():
        for code, how in reasons.items():
            if how in (R.E2E, R.UNTESTED):
                continue
            path = ROOT / how
            if not path.is_file() or not re.search(rf"[\"']{re.escape(code)}[\"']", path.read_text()):
                bad.append((stage, code, how))
    assert not bad, f"the named test does not exist or does not name the reason: {bad}"


def test_only_recipe_stages_are_provoked_over_http():
    """The plausible server answers LLM prompts; media, sources, releases and gates it cannot reach."""
    assert R.e2e_reasons()
    assert all(how != R.E2E for reasons in R.SHARED_STAGES.values() for how in reasons.values())
    assert all(stage in R.RECIPE_STAGES for stage, _ in R.e2e_reasons())


def test_the_scan_reads_literals_constants_minters_and_flags_unknown_sites():
    src = {
        "assets/x.py": (
            "CODE = 'from_constant'\n"
            "def stage(log, item, why):\n"
            "    log.add(item, 'brand_new_reason')\n"
            "    log.add(item, CODE, 'E')\n"
            "    log.add(item, why)\n"
            "    out.reject(item, 'release_reason', 'detail')\n"
            "    rows.append({'item_id': item, 'reason': 'row_reason', 'detail': ''})\n"
        ),
        "forge/llm/refine.py": "def add_rejects(self, log):\n    log.add(o.item_id, f'refine_{o.reason}')\n",
    }
    emitted, unknown = scan(src)
    assert {"brand_new_reason", "from_constant", "release_reason", "row_reason"} <= set(emitted)
    assert "refine_max_rounds" in emitted  # a composed code expands to every value
    assert unknown == ["assets/x.py: why"]
    assert "brand_new_reason" not in R.declared()  # so the real scan would fail on such a line
