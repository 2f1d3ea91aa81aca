"""`iolens.optional`: the one place that imports an extra's packages, and the one line that names the extra to
install when one is missing; its table of extras is pyproject.toml's."""
from __future__ import annotations

import json
import re
import sys

import pytest

from iolens import optional
from iolens.errors import LogError, MissingDependencyError
from iolens.optional import EXTRAS, require, require_extra

from support.corpus import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python < 3.11
    import tomli as tomllib


@pytest.mark.parametrize("call, words", [
    (lambda: require_extra("fake", "iolens frob"),
     ["iolens frob needs the 'fake' extra", "no-such-dist, nor-this-dist not installed", "pip install 'iolens[fake]'"]),
    (lambda: require("iolens_no_such_module"), ["no-such-dist is not installed", "(pip install 'iolens[fake]')"]),
    (lambda: require("iolens_nor_this_one.sub"), ["nor-this-dist is not installed", "(pip install 'iolens[fake]')"]),
])
def test_a_missing_package_is_one_line_naming_the_extra(fake_extra, call, words):
    with pytest.raises(MissingDependencyError) as caught:
        call()
    text = str(caught.value)
    assert isinstance(caught.value, LogError)  # the CLI prints it as `iolens: error: ...` and exits with status 2
    assert "\n" not in text and all(w in text for w in words), text


def test_a_present_package_is_imported(fake_extra):
    assert require("json") is json
    assert optional.missing("fake") == ["no-such-dist", "nor-this-dist"]


@pytest.mark.parametrize("extra", ["fleet", "tune", "sql", "mcp"])
def test_an_installed_extra_says_nothing(extra):
    """`.[test]` pulls every extra: here each is there, and the check before a command passes."""
    assert optional.missing(extra) == []
    require_extra(extra, "iolens frob")


def test_a_package_outside_the_extras_is_a_programming_error():
    with pytest.raises(ValueError):
        require("os")


def _requirement_names(requirements: list) -> set:
    """Distribution names of requirement strings, with the extras they name (`dask[distributed]` brings both)."""
    names = set()
    for req in requirements:
        m = re.match(r"([A-Za-z0-9_.-]+)(\[([^\]]+)\])?", req)
        names.add(m.group(1).lower())
        names.update(f"{m.group(1).lower()}[{e.strip()}]" for e in (m.group(3) or "").split(",") if e.strip())
    return names


def test_the_extras_are_pyprojects():
    """Every package iolens.optional imports for an extra is a requirement of that extra in pyproject.toml (and
    no heavy package sneaks back into the core)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    extras = project["optional-dependencies"]
    for extra in {e for e, _ in EXTRAS.values()}:
        declared = _requirement_names(extras[extra])
        for module in optional.modules_of(extra):
            package = EXTRAS[module][1]
            assert package in declared or f"dask[{package}]" in declared, (extra, package)
    core = _requirement_names(project["dependencies"])
    assert not core & {package for _, package in EXTRAS.values()}
    assert set(_requirement_names(extras["all"])) == {"iolens", *(f"iolens[{e}]" for e in ("fleet", "tune", "sql", "mcp"))}
    assert "iolens[all]" in _requirement_names(extras["test"])  # CI tests every extra
