"""Fixtures of the unit tests."""
from __future__ import annotations

import pytest

from iolens.optional import EXTRAS


FAKE = {"json": ("fake", "json-dist"), "iolens_no_such_module": ("fake", "no-such-dist"),
        "iolens_nor_this_one": ("fake", "nor-this-dist")}


@pytest.fixture
def fake_extra(monkeypatch):
    """An extra named `fake` with one package that is there and two that are not."""
    for module, entry in FAKE.items():
        monkeypatch.setitem(EXTRAS, module, entry)
    return "fake"
