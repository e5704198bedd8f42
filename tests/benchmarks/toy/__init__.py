"""A sixth benchmark that lives entirely under tests/: the worked example of docs/benchmarks.md."""
