"""scripts/export_fingerprint.py: content hashes of exports, scoped ignores, and --find."""

import importlib.util
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

_spec = importlib.util.spec_from_file_location(
    "export_fingerprint", Path(__file__).resolve().parents[2] / "scripts" / "export_fingerprint.py"
)
fpmod = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fpmod)


def _data_dir(root: Path, port: int, order: list[int]) -> Path:
    d = root / f"run{port}" / "exports" / "paper" / "v1" / "parquet"
    d.mkdir(parents=True)
    rows = [{"item_id": f"it{i}", "answer": "A", "source_url": f"http://127.0.0.1:{port}/x{i}.mp4"} for i in order]
    pq.write_table(pa.Table.from_pylist(rows), d / "test.parquet")
    return root / f"run{port}"


def test_row_order_is_not_a_difference_and_scoped_ignores_apply_where_named(tmp_path, capsys):
    a = fpmod.fingerprint(_data_dir(tmp_path, 8811, [1, 2, 3]))
    b = fpmod.fingerprint(_data_dir(tmp_path, 8822, [3, 2, 1]))
    assert [d for d in fpmod.compare(a, b, set()) if "source_url" in d]  # the port is seen
    assert fpmod.compare(a, b, {"exports/paper/:source_url"}) == []  # scoped to that export
    assert fpmod.compare(a, b, {"tables/:source_url"}) != []  # another prefix leaves it in
    assert fpmod.summary(a, {"source_url"})["content"] == fpmod.summary(b, {"source_url"})["content"]
    f = tmp_path / "a.json"
    f.write_text(json.dumps(a))
    assert fpmod.main(["--find", "127.0.0.1:8811", "--in", str(f)]) == 1
    assert capsys.readouterr().out.strip() == "exports/paper/v1/parquet/test.parquet: source_url"
    assert fpmod.main(["--find", "127.0.0.1:9999", "--in", str(f)]) == 0
