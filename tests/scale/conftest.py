from tests.vision.conftest import _offline_ultralytics, photo_dir, photos  # noqa: F401
