"""Fixtures of the unit tests."""
from __future__ import annotations

import polars as pl
import pytest

from iolens.optional import EXTRAS
from iolens.pipeline.sources import Source
from iolens.views.sql import Engine


FAKE = {"json": ("fake", "json-dist"), "iolens_no_such_module": ("fake", "no-such-dist"),
        "iolens_nor_this_one": ("fake", "nor-this-dist")}


@pytest.fixture
def fake_extra(monkeypatch):
    """An extra named `fake` with one package that is there and two that are not."""
    for module, entry in FAKE.items():
        monkeypatch.setitem(EXTRAS, module, entry)
    return "fake"


class Frames(Source):
    """A source over frames given by hand: what `open_target` returns, without a log."""

    def __init__(self, frames: dict):
        super().__init__("hand-built")
        self.frames = frames
        self.asked: list = []

    def names(self) -> list:
        return list(self.frames)

    def _build(self, name):
        self.asked.append(name)
        return self.frames[name]


@pytest.fixture
def engine():
    """An SQL engine over two hand-built tables (segments of two ranks, one file)."""
    segments = pl.DataFrame({"rank": [0, 0, 1, 1, 1], "op": ["write", "write", "write", "read", "write"],
                             "length": [100, 200, 50, 4096, 1 << 20], "start": [0.0, 1.0, 2.0, 31.0, 40.0]})
    files = pl.DataFrame({"file_id": [7], "name": ["/ckpt/file"]})
    e = Engine(Frames({"segments": segments, "files": files}))
    yield e
    e.close()
