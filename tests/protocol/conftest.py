"""The review tests' real Label Studio (one per session) for the protocol steps' tests."""

from tests.review.conftest import ls_server, review_env  # noqa: F401 - fixtures shared with tests/review
