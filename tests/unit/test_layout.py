"""The tests show the structure (issue 28): tests on hand-built inputs in tests/unit, tests on real logs, the
command, the browser and real programs in tests/integration/<part>; what they share in the tests/support package;
fixtures in conftest.py files only; no test imports conftest or another test module. Read from the source (ast)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
TEST_FILES = sorted(p for p in TESTS.rglob("test_*.py") if "support" not in p.relative_to(TESTS).parts)


def _rel(path: Path) -> str:
    return str(path.relative_to(TESTS))


def _imported(tree: ast.AST) -> set:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _is_fixture(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target) in ("pytest.fixture", "fixture")


def test_every_test_file_is_unit_or_integration_of_a_part():
    misplaced = [_rel(p) for p in TEST_FILES
                 if not (p.parent == TESTS / "unit" or p.parent.parent == TESTS / "integration")]
    assert not misplaced, f"put these in tests/unit or tests/integration/<part>: {misplaced}"


@pytest.mark.parametrize("path", TEST_FILES, ids=_rel)
def test_no_fixture_outside_conftest_and_no_test_imports_another(path):
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    fixtures = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                and any(_is_fixture(d) for d in n.decorator_list)]
    assert not fixtures, f"fixtures belong in a conftest.py: {fixtures}"
    others = {m for m in _imported(tree) if m == "conftest" or m.startswith("test_")}
    assert not others, f"shared code belongs in tests/support, fixtures in conftest.py: imports {others}"
