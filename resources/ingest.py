"""Ingest settings shared by the media-trunk assets: where the sources file is, the values of
its ``${...}`` placeholders, and how yt-dlp/ffmpeg behave (timeouts, retries, format cap)."""

import os
from typing import Dict, Optional

import dagster as dg

from forge.media.download import DownloadSettings


class IngestResource(dg.ConfigurableResource):
    """Sources file (default ``config/sources.yaml``; ``SUBTEXT_SOURCES`` overrides) and
    downloader settings. ``variables`` fill ``${NAME}`` placeholders before the environment does."""

    sources_path: str = "config/sources.yaml"
    variables: Dict[str, str] = {}
    max_height: int = 720
    socket_timeout_s: float = 20.0
    retries: int = 3
    ffmpeg_path: Optional[str] = None  # imageio-ffmpeg's bundled binary when unset
    read_inbox: bool = True  # also list the drop folder <data>/inbox/ (forge/media/inbox.py)

    def download_settings(self) -> DownloadSettings:
        return DownloadSettings(max_height=self.max_height, socket_timeout_s=self.socket_timeout_s,
                                retries=self.retries, ffmpeg_location=self.ffmpeg_path)

    def ffmpeg(self) -> str:
        from forge.media.download import ffmpeg_exe

        return ffmpeg_exe(self.ffmpeg_path)


def default_ingest() -> IngestResource:
    return IngestResource(sources_path=os.environ.get("SUBTEXT_SOURCES", "config/sources.yaml"))


RESOURCES = {"ingest": default_ingest()}
