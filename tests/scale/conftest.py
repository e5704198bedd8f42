from tests.vision.conftest import RAM_DOUBLE, _offline_ultralytics, photo_dir, photos, ram_double  # noqa: F401
