"""II-Bench's public release (data/dev.json, data/test.json with images/)."""

from assets.releases.factory import release_defs

from .logic.release import parse_release

defs = release_defs("iibench", parse_release)
