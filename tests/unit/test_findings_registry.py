"""The registry of findings: built from the modules of a folder, one `FINDING` per module, and the derived tables
(codes, key metrics, thresholds, supersedes) checked as they are built."""
from __future__ import annotations

import pkgutil
import sys
import textwrap

import pytest

from iolens.analysis.diagnosis import CODES, DEFINITIONS, FINDINGS, KEY_METRICS, RULES, findings
from iolens.analysis.diagnosis.common import SHARED_THRESHOLDS
from iolens.analysis.diagnosis.finding import Finding, Supersedes, Threshold


def test_every_module_of_the_folder_is_one_finding_and_nothing_else_is():
    modules = {m.name for m in pkgutil.iter_modules(findings.__path__) if not m.name.startswith("_")}
    assert modules == {f.module for f in FINDINGS.values()}
    assert all(code == code.upper() and f.code == code for code, f in FINDINGS.items())
    assert list(FINDINGS) == sorted(FINDINGS)  # the order a log is diagnosed in: by code


def test_the_derived_tables_come_from_the_findings():
    assert list(CODES) == [*FINDINGS, "CHECK_FAILED"]
    assert all(CODES[c] == f.meaning and KEY_METRICS[c] == f.key_metrics for c, f in FINDINGS.items())
    assert RULES == {c: f for c, f in FINDINGS.items() if f.rule is not None}
    owned = [t for f in FINDINGS.values() for t in f.thresholds]
    assert list(DEFINITIONS) == [*SHARED_THRESHOLDS, *owned]


def _package(root, name: str, modules: dict):
    """A made-up package `name` under `root` with `modules` {file name: source}."""
    folder = root / name
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    for file, source in modules.items():
        (folder / file).write_text(textwrap.dedent(source))
    return folder


FINDING_SOURCE = """
    from iolens.analysis.diagnosis.finding import Finding
    FINDING = Finding(code="{code}", meaning="m", report=lambda ctx, verdict: [])
"""


@pytest.mark.parametrize("name, modules, expect", [
    ("pk_two", {"alpha_one.py": FINDING_SOURCE.format(code="ALPHA_ONE"),
                "beta.py": FINDING_SOURCE.format(code="BETA"),
                "_shared.py": "X = 1\n"},  # a module starting with "_" is not a finding
     ["ALPHA_ONE", "BETA"]),
    ("pk_none", {"gamma.py": "X = 1\n"}, TypeError),  # a module without FINDING
    ("pk_misnamed", {"delta.py": FINDING_SOURCE.format(code="EPSILON")}, ValueError),  # code and module differ
])
def test_discover_a_made_up_folder(tmp_path, monkeypatch, name, modules, expect):
    folder = _package(tmp_path, name, modules)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        if isinstance(expect, list):
            assert list(findings.discover([str(folder)], name)) == expect
        else:
            with pytest.raises(expect):
                findings.discover([str(folder)], name)
    finally:
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def _finding(code, thresholds=(), reads=(), supersedes=()):
    return Finding(code=code, meaning="m", report=lambda ctx, verdict: [], thresholds=thresholds, reads=reads,
                   supersedes=supersedes)


@pytest.mark.parametrize("made, error", [
    ({"A": _finding("A", (Threshold("a_min", 1, "count", "h"),)), "B": _finding("B", reads=("a_min",))}, None),
    ({"A": _finding("A", (Threshold("strong_share", 1, "share", "h"),))}, "defined more than once"),
    ({"A": _finding("A", reads=("nowhere",))}, "defined nowhere"),
    ({"A": _finding("A", supersedes=(Supersedes("B", when=None, reads=("nowhere",)),))}, "defined nowhere"),
])
def test_thresholds_are_defined_once_and_read_only_when_defined(made, error):
    if error is None:
        assert [t.name for t in findings.definitions(made)][-1] == "a_min"
    else:
        with pytest.raises(ValueError, match=error):
            findings.definitions(made)


def test_a_finding_can_only_supersede_a_finding():
    a = _finding("A", supersedes=(Supersedes("B", when=None),))
    assert findings.superseded({"A": a, "B": _finding("B")})["B"][0][0] == "A"
    with pytest.raises(ValueError, match="no finding"):
        findings.superseded({"A": a})


def test_the_registry_declares_todays_dedupes():
    declared = {(by, code, s.part) for code, pairs in findings.SUPERSEDED.items() for by, s in pairs}
    assert declared == {("LUSTRE_STRIPING", "OST_IMBALANCE", None), ("DATA_SIEVING", "REDUNDANT_READS", None),
                        ("SERIALIZED_IO", "RANK_IMBALANCE", "spread")}
