"""Keep Ultralytics off the network (docs/vision.md, docs/security.md).

Ultralytics reads its switches from the environment when it is first imported:
``YOLO_OFFLINE=1`` stops the DNS probes (``is_online``), analytics events and hub calls;
``YOLO_AUTOINSTALL=false`` stops on-the-fly ``pip install`` of extras; ``YOLO_CONFIG_DIR``
keeps its settings file out of $HOME. Plots are drawn with cv2 (no font download) and
person indicators with Pillow's built-in font, so ``check_font`` never runs.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

OFFLINE_ENV = {"YOLO_OFFLINE": "1", "YOLO_AUTOINSTALL": "false", "YOLO_VERBOSE": "false"}


def ensure_offline_env(config_dir: str | Path | None = None) -> None:
    """Set the switches (without overriding an explicit choice) before importing ultralytics."""
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    if "YOLO_CONFIG_DIR" not in os.environ:
        # A private per-process folder (mkdtemp: 0700, unique), never a fixed shared /tmp path.
        d = Path(config_dir) if config_dir else Path(tempfile.mkdtemp(prefix="subtext-ultralytics-"))
        d.mkdir(parents=True, exist_ok=True)
        os.environ["YOLO_CONFIG_DIR"] = str(d)


def import_ultralytics(allow_network: bool = False):
    """Import ultralytics with the offline switches applied; also turn off settings sync.

    If ultralytics was imported earlier by other code without the environment, its
    import-time probe already ran; we still force the module-level flags off so nothing
    later (events, hub, downloads of assets) believes it is online.
    """
    if not allow_network:
        ensure_offline_env()
    # On import ultralytics sets OMP_NUM_THREADS=1 ("for training") unless it is set; when
    # torch is loaded after that, OpenMP pins every thread of this process to one core
    # (EasyOCR ran 4x slower). Choose all cores first, unless the user chose a value.
    os.environ.setdefault("OMP_NUM_THREADS", str(os.cpu_count() or 1))
    import ultralytics
    import ultralytics.utils as uu

    # Importing ultralytics replaces PIL.Image.open process-wide with a wrapper that, on any
    # unidentifiable file, calls check_requirements("pi-heif") (a pip install when autoinstall
    # is on) and otherwise raises ModuleNotFoundError instead of UnidentifiedImageError. Put
    # Pillow's own opener back: every stage in this process then sees the standard errors.
    from PIL import Image
    from ultralytics.utils import patches

    original = getattr(patches, "_image_open", None)
    if original is not None and getattr(Image.open, "__module__", "") == patches.__name__:
        Image.open = original
    if not allow_network:
        uu.ONLINE = False
        uu.AUTOINSTALL = False
        try:
            if uu.SETTINGS.get("sync", False):
                uu.SETTINGS["sync"] = False  # persisted under YOLO_CONFIG_DIR, never $HOME
        except Exception:  # noqa: BLE001 - settings object API differs across versions; the env already covers it
            pass
    return ultralytics
