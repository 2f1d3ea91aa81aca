"""Fixtures of the unit tests."""
from __future__ import annotations

import pytest

from iolens.optional import EXTRAS


FAKE = {"json": "json-dist", "iolens_no_such_module": "no-such-dist", "iolens_nor_this_one": "nor-this-dist"}


@pytest.fixture
def fake_extra(monkeypatch):
    """An extra named `fake` with one package that is there and two that are not."""
    monkeypatch.setitem(EXTRAS, "fake", FAKE)
    return "fake"
