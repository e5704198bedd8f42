"""Label Studio, the human-review tool (docs/review.md): where it listens and its API token.

Unset fields come from ``forge.people.config.server``: ``SUBTEXT_REVIEW_URL`` /
``SUBTEXT_REVIEW_TOKEN`` from the environment, else what ``make review`` set up for the data dir
(127.0.0.1:8080, the generated admin token in ``<data dir>/review/admin.json``). The blind
baseline's own instance (``blind_client``): ``forge.people.blind_room.blind_server``.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from forge.people.blind_room import blind_server
from forge.people.client import LabelStudio
from forge.people.config import server


class ReviewResource(dg.ConfigurableResource):
    url: str = ""  # "" = SUBTEXT_REVIEW_URL, else config/review.yaml's server
    token: str = ""  # "" = SUBTEXT_REVIEW_TOKEN, else <data dir>/review/admin.json
    blind_url: str = ""  # "" = SUBTEXT_REVIEW_BLIND_URL, else where `make review` started it
    blind_token: str = ""  # "" = SUBTEXT_REVIEW_BLIND_TOKEN, else <data dir>/review/blind-studio/admin.json

    def client(self, data_dir: str | Path) -> LabelStudio:
        s = server(Path(data_dir))
        return LabelStudio(self.url or s.url, self.token or s.token)

    def blind_client(self, data_dir: str | Path) -> LabelStudio:
        """The blind baseline's instance: its own accounts, no review project (docs/review.md)."""
        s = blind_server(Path(data_dir))
        return LabelStudio(self.blind_url or s.url, self.blind_token or s.token)


def resources() -> dict[str, ReviewResource]:
    return {"review": ReviewResource()}
