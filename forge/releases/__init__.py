"""Published benchmark releases as inputs (docs/releases.md).

A release (a paper's public files: JSON / JSONL / CSV / Parquet plus its images or videos)
is named in ``config/releases.yaml`` or dropped under ``<data>/inbox/_releases/<paper>/<name>/``.
Each paper's parser lives in ``assets/recipes/<paper>/logic/release.py`` (``parse_release(info)
-> ParsedRelease``: items in the paper's item columns with ``origin = imported``, the
release's version and licence per item, rejects with reasons, notes of kept unknown values);
``forge.releases.compare`` puts a built set next to an imported release.
"""

from forge.releases.config import ReleaseInfo, load_releases, release_info
from forge.releases.records import ParsedRelease

__all__ = ["ParsedRelease", "ReleaseInfo", "load_releases", "release_info"]
