"""Human protocol steps (group ``protocol``, docs/review.md "Protocol steps"): per declared step of a
paper, ``<name>_<step>_tasks`` → ``<name>_<step>_results`` on Label Studio (``make review``)."""

import dagster as dg

from assets.protocol.factory import protocol_defs
from forge.benchmarks import registry

defs = dg.Definitions.merge(*(protocol_defs(spec) for spec in registry.specs()))
