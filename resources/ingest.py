"""Ingest settings shared by the media-trunk assets: where the sources file is, the values of
its ``${...}`` placeholders, how yt-dlp/ffmpeg behave (timeouts, retries, format cap), and
the policy for untrusted input (docs/security.md): which environment variables may expand,
which local folders and which non-public hosts may be read, and the size / duration /
playlist caps. The defaults are the safe ones; the operator widens them here or with
``SUBTEXT_ALLOWED_HOSTS`` / ``SUBTEXT_ALLOWED_ROOTS`` / ``SUBTEXT_ALLOWED_VARIABLES``."""

import os
from dataclasses import replace
from pathlib import Path

import dagster as dg
from pydantic import Field

from forge.media.download import DownloadSettings
from forge.media.images import ImageSettings
from forge.media.policy import IngestPolicy, policy_from_settings

_DEFAULT = IngestPolicy()


class IngestResource(dg.ConfigurableResource):
    """Sources file (default ``config/sources.yaml``; ``SUBTEXT_SOURCES`` overrides) and
    downloader settings. ``variables`` fill ``${NAME}`` placeholders before the environment does."""

    sources_path: str = "config/sources.yaml"
    variables: dict[str, str] = {}
    max_height: int = 720
    socket_timeout_s: float = 20.0
    retries: int = 3
    ffmpeg_path: str | None = None  # imageio-ffmpeg's bundled binary when unset
    read_inbox: bool = True  # also list the drop folder <data>/inbox/ (forge/media/inbox.py)
    allowed_variables: list[str] = Field(
        default_factory=list, description="environment variables ${NAME} may expand besides non-secret SUBTEXT_*"
    )
    allowed_roots: list[str] = Field(
        default_factory=list, description="folders local sources may read besides the data dir (and its inbox)"
    )
    allowed_hosts: list[str] = Field(
        default_factory=list, description="hosts, addresses or networks (CIDR) allowed although not public"
    )
    max_download_bytes: int = _DEFAULT.max_download_bytes
    max_duration_s: float = _DEFAULT.max_duration_s
    max_playlist_items: int = _DEFAULT.max_playlist_items
    max_text_file_bytes: int = _DEFAULT.max_text_file_bytes

    def policy(self, data_dir: str | os.PathLike[str] | None) -> IngestPolicy:
        """The policy for this data dir (a root, with its inbox) plus configured roots / hosts."""
        return policy_from_settings(
            Path(data_dir).resolve() if data_dir else None,
            self.allowed_roots,
            self.allowed_hosts,
            self.allowed_variables,
            max_download_bytes=self.max_download_bytes,
            max_duration_s=self.max_duration_s,
            max_playlist_items=self.max_playlist_items,
            max_text_file_bytes=self.max_text_file_bytes,
        )

    def download_settings(self, data_dir: str | os.PathLike[str]) -> DownloadSettings:
        return DownloadSettings(
            max_height=self.max_height,
            socket_timeout_s=self.socket_timeout_s,
            retries=self.retries,
            ffmpeg_location=self.ffmpeg_path,
            policy=self.policy(data_dir),
        )

    def image_settings(self, base: ImageSettings, data_dir: str | os.PathLike[str]) -> ImageSettings:
        return replace(base, policy=self.policy(data_dir), max_bytes=min(base.max_bytes, self.max_download_bytes))

    def ffmpeg(self) -> str:
        from forge.media.download import ffmpeg_exe

        return ffmpeg_exe(self.ffmpeg_path)


def default_ingest() -> IngestResource:
    return IngestResource(sources_path=os.environ.get("SUBTEXT_SOURCES", "config/sources.yaml"))


def resources() -> dict[str, IngestResource]:
    return {"ingest": default_ingest()}
