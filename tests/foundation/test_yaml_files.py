"""forge/storage/yaml_files.py: the project's one YAML reader gives what ``yaml.safe_load`` gives, a
copy per caller, and a file edited between two reads is read anew."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from forge.storage.yaml_files import parse_yaml, read_yaml

ROOT = Path(__file__).resolve().parents[2]


def test_every_project_yaml_reads_as_safe_load_reads_it():
    files = [p for top in ("config", "data_contracts", "assets") for p in (ROOT / top).rglob("*.y*ml")]
    assert len(files) > 40
    for p in files:
        assert read_yaml(p) == yaml.safe_load(p.read_text(encoding="utf-8")), p


def test_each_caller_gets_its_own_copy():
    text = "a: {b: [1, 2]}\n"
    first = parse_yaml(text)
    first["a"]["b"].append(3)
    assert parse_yaml(text) == {"a": {"b": [1, 2]}}


def test_an_edited_file_is_read_anew(tmp_path):
    p = tmp_path / "c.yaml"
    p.write_text("x: 1\n")
    assert read_yaml(p) == {"x": 1}
    p.write_text("x: 2\n")  # same size, likely the same mtime tick
    assert read_yaml(p) == {"x": 2}


def test_unsafe_tags_and_bad_yaml_are_refused_as_safe_load_refuses_them():
    with pytest.raises(yaml.YAMLError):
        parse_yaml("!!python/object/apply:os.system ['true']\n")
    with pytest.raises(yaml.YAMLError):
        parse_yaml("a: [1, 2\n")
