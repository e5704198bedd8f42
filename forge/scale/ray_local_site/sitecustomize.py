"""Imported (as ``sitecustomize``) by the Python processes of a private Ray cluster this project
starts: ``forge/scale/ray_pool.py`` puts this folder on their ``PYTHONPATH`` (docs/security.md).

Ray's dashboard process runs even with the dashboard off (it hosts the usage-stats module), and
that module probes the cloud metadata endpoints (169.254.169.254 for Azure and AWS, a lookup of
metadata.google.internal for GCP) to name the cloud in a usage report, whether usage stats are
enabled or not. A private cluster on this machine has nothing to detect: in that one process the
probe gives the answer it gives off-cloud, without a request.
"""

import sys

if sys.argv and sys.argv[0].replace("\\", "/").endswith("ray/dashboard/dashboard.py"):
    from ray._common.usage import usage_lib

    usage_lib.get_cloud_from_metadata_requests = lambda: "unknown"
