"""One source of truth for the version: native/Cargo.toml's, as the installed command and package report it."""
from __future__ import annotations

import re

import pytest

import iolens
from iolens.version import __version__

from support.cli import run_iolens
from support.corpus import REPO

CARGO = REPO / "native" / "Cargo.toml"


def cargo_version() -> str:
    return re.search(r'(?m)^version = "([^"]+)"', CARGO.read_text()).group(1)


@pytest.mark.smoke
def test_the_command_and_the_package_say_cargo_tomls_version():
    assert run_iolens("--version").stdout.split()[-1] == cargo_version()
    assert iolens.__version__ == __version__ == cargo_version()
