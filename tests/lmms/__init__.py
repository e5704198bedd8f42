"""lmms-eval, run for real on the task folders the exports write (issue #58)."""
