"""`iolens.optional`: the one place that imports an extra's packages, and the one line that names the extra to
install when one is missing; its table of extras is pyproject.toml's."""
from __future__ import annotations

import json
import re
import sys

import pytest

from iolens import optional
from iolens.errors import LogError
from iolens.optional import EXTRAS, MissingExtra, load, require

from support.corpus import REPO

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python < 3.11
    import tomli as tomllib


@pytest.mark.parametrize("call, missing", [
    (lambda: require("fake", "iolens frob"), ["no-such-dist", "nor-this-dist"]),
    (lambda: load("fake", "iolens_no_such_module"), ["no-such-dist"]),
    (lambda: load("fake", "iolens_nor_this_one.sub"), ["nor-this-dist"]),
])
def test_a_missing_package_is_one_line_naming_the_extra(fake_extra, call, missing):
    with pytest.raises(MissingExtra) as caught:
        call()
    err = caught.value
    assert isinstance(err, LogError)  # the CLI prints it as `iolens: error: ...` and exits with status 2
    text = str(err)
    assert "\n" not in text and err.extra == "fake" and err.missing == missing
    assert "'fake' extra" in text and text.endswith("pip install 'iolens[fake]'")
    assert all(m in text for m in missing)


def test_what_needs_the_extra_is_named_first(fake_extra):
    with pytest.raises(MissingExtra, match=r"^iolens frob needs the 'fake' extra"):
        require("fake", "iolens frob")


def test_a_present_package_is_imported(fake_extra):
    assert load("fake", "json") is json
    assert optional.missing("fake") == ["no-such-dist", "nor-this-dist"]
    assert not optional.available("fake")


def test_a_package_outside_the_extra_is_a_programming_error(fake_extra):
    with pytest.raises(ValueError):
        load("fake", "os")


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
    for extra, packages in EXTRAS.items():
        declared = _requirement_names(extras[extra])
        for dist in packages.values():
            assert dist in declared or f"dask[{dist}]" in declared, (extra, dist)
    core = _requirement_names(project["dependencies"])
    heavy = {dist for packages in EXTRAS.values() for dist in packages.values()} | {"dask"}
    assert not core & heavy
    assert set(_requirement_names(extras["all"])) == {"iolens", *(f"iolens[{e}]" for e in EXTRAS)}
    assert "iolens[all]" in _requirement_names(extras["test"])  # CI tests every extra
