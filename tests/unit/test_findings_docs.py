"""The docs' generated blocks (docs/diagnosis.md's codes, thresholds, key metrics, savings, JSON Schema;
docs/fleet.md's rule codes) are what the registry makes: regenerate them with
`python -m iolens.analysis.diagnosis.findings --docs`."""
from __future__ import annotations

from pathlib import Path

import pytest

from iolens.analysis.diagnosis import DEFINITIONS, FINDINGS, RULES
from iolens.analysis.diagnosis.finding import Threshold
from iolens.analysis.diagnosis.findings import _catalogue
from iolens.analysis.diagnosis.findings.__main__ import main

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("name", list(_catalogue.BLOCKS))
def test_docs_are_the_generated_tables(name):
    text = (DOCS / name).read_text()
    assert _catalogue.generated(text, _catalogue.BLOCKS[name]) == text, \
        f"docs/{name} differs from the registry: run python -m iolens.analysis.diagnosis.findings --docs"


def test_the_tables_name_every_code_and_threshold():
    codes, thresholds, savings = _catalogue.codes_table(), _catalogue.thresholds_table(), _catalogue.savings_table()
    assert all(f"| `{code}` |" in codes for code in [*FINDINGS, "CHECK_FAILED"])
    assert all(f"| `{t.name}` |" in thresholds for t in DEFINITIONS)
    assert sorted(c for row in savings.splitlines()[2:] for c in row.split(" | ")[0][2:].split(", ")) == \
        sorted([*FINDINGS, "CHECK_FAILED"])
    rules = _catalogue.fleet_rules_table()
    assert all(f"| {code} | rule (`findings/{f.module}.py`)" in rules for code, f in RULES.items())


@pytest.mark.parametrize("kind, default, shown", [
    ("bytes", 102400, "102400 (100 KiB)"),
    ("bytes", 1 << 30, "1073741824 (1 GiB)"),
    ("bytes", 1000, "1000 (1000 B)"),
    ("share", 0.1, "0.1 (10%)"),
    ("share", 0.33, "0.33 (33%)"),
    ("seconds", 0.5e-3, "0.5 ms"),
    ("seconds", 0.01, "0.01 s"),
    ("seconds", 60.0, "60 s"),
    ("count", 1000, "1000"),
    ("ratio", 2.0, "2"),
])
def test_a_default_is_shown_with_its_unit(kind, default, shown):
    assert _catalogue.default_text(Threshold("x", default, kind, "")) == shown


def test_generation_replaces_only_between_the_markers(tmp_path):
    for name, made in _catalogue.BLOCKS.items():
        blocks = "\n\n".join(f"<!-- generated: {n} ({_catalogue.COMMAND}) -->\nold\n<!-- end of generated: {n} -->"
                             for n in made)
        (tmp_path / name).write_text(f"# Title\n\nprose\n\n{blocks}\n\nmore prose\n")
    assert main(["--docs", "--check", str(tmp_path)]) == 1
    assert main(["--docs", str(tmp_path)]) == 0
    for name in _catalogue.BLOCKS:
        text = (tmp_path / name).read_text()
        assert text.startswith("# Title\n\nprose\n\n") and text.endswith("\n\nmore prose\n")
        assert "\nold\n" not in text
    assert main(["--docs", "--check", str(tmp_path)]) == 0
    (tmp_path / "fleet.md").write_text("no markers\n")
    with pytest.raises(ValueError, match="no block"):
        main(["--docs", str(tmp_path)])
