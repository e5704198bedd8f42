"""The demo environment: the sample corpus built from installed packages, served on 127.0.0.1.

The port is ``SUBTEXT_DEMO_PORT`` (default 8765), or a free one when that is taken: item ids
come from the URLs as declared (``${SAMPLE_SERVER}/...``, forge/media/sources.py
``declared_locator``), so the port never changes an id and a re-run adds no new items.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from forge.benchmarks.settings import record_profile
from forge.media.loopback import LoopbackServer, loopback_allowances
from forge.media.sample_corpus import build_sample_corpus
from forge.provenance.environment import endpoint_settings, record_environment
from forge.storage.location import local_base


@contextmanager
def prepare_demo(data_dir: str | None = None) -> Iterator[dict[str, str]]:
    data = Path(data_dir) if data_dir else local_base()  # on object storage: this machine's work dir
    print(f"Building the sample corpus in {data / 'sample_corpus'} …", flush=True)
    corpus = build_sample_corpus(data / "sample_corpus")
    port = int(os.environ.get("SUBTEXT_DEMO_PORT", "8765"))
    try:
        server = LoopbackServer(corpus.web_dir, port=port).start()
    except OSError as exc:  # port taken (another demo): ids do not depend on it
        print(f"Port {port} unavailable ({exc}); serving on a free port instead.")
        server = LoopbackServer(corpus.web_dir, port=0).start()
    values = {**corpus.as_variables(), "SAMPLE_SERVER": server.url}
    values.update(loopback_allowances(sorted(values)))  # the ingest policy refuses loopback and other variables
    print(f"Serving it at {server.url}", flush=True)
    if not os.environ.get("OPENAI_API_KEY") and not os.environ.get("OPENAI_BASE_URL"):
        # No endpoint: the LLM stages run on the offline stub. Exports of stub items are
        # refused unless forced; the demo forces them so the export stage can be seen, and
        # every such export's card opens with a warning that its items are placeholders.
        values["SUBTEXT_EXPORT_FORCE_STUB"] = os.environ.get("SUBTEXT_EXPORT_FORCE_STUB", "1")
        print("No LLM endpoint configured: LLM stages use the offline stub; demo exports are forced and labelled.")
    # The demo's relaxed recipe settings (assets/recipes/*/config.yaml `profiles: demo:`) unless the user chose a profile.
    values["SUBTEXT_RECIPE_PROFILE"] = os.environ.get("SUBTEXT_RECIPE_PROFILE") or "demo"
    record_profile(values["SUBTEXT_RECIPE_PROFILE"], data)  # `make ui` on this data dir loads the same settings
    print(f"Recipe settings profile: {values['SUBTEXT_RECIPE_PROFILE']}", flush=True)
    # Everything above (never a secret), for `make ui`, its sensors, `dg launch` and later builds.
    chosen = {k: os.environ[k] for k in ("SUBTEXT_SOURCES",) if os.environ.get(k)}
    recorded = record_environment({**endpoint_settings(), **chosen, **values}, data)
    print(f"Environment recorded in {recorded} (every entry point on this data dir reads it)", flush=True)
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield values
    finally:
        server.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
