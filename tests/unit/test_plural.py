"""`plural`: a count and its noun in the right number, as the findings' texts print them."""
from __future__ import annotations

import pytest

from iolens.analysis.units import plural


@pytest.mark.parametrize("n, word, kwargs, text", [
    (0, "file", {}, "0 files"),
    (1, "file", {}, "1 file"),
    (2, "file", {}, "2 files"),
    (1200, "file", {}, "1,200 files"),
    (1, "aggregator", {}, "1 aggregator"),
    (4, "aggregator", {}, "4 aggregators"),
    (1, "large shared file", {}, "1 large shared file"),
    (3, "other rank", {}, "3 other ranks"),
    (2, "process", {"many": "processes"}, "2 processes"),
    (1, "process", {"many": "processes"}, "1 process"),
    # a mean per rank or per checkpoint, formatted by the text: its noun follows what is printed
    (1.0, "write call", {"shown": "1"}, "1 write call"),
    (1.0004, "collective call", {"shown": "1"}, "1 collective call"),
    (1.5, "write call", {"shown": "1.5"}, "1.5 write calls"),
    (0.5, "write call", {"shown": "0.5"}, "0.5 write calls"),
    (2000.0, "collective call", {"shown": "2e+03"}, "2e+03 collective calls"),
])
def test_plural(n, word, kwargs, text):
    assert plural(n, word, **kwargs) == text
