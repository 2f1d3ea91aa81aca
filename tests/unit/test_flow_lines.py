"""`iolens jobs`' flow lines: the files of one folder passing between the same two steps are said once."""
from __future__ import annotations

import pytest

from iolens.views.terminal_jobs import flow_lines


def flows(*rows):
    return [{"file": f, "from": a, "to": b} for f, a, b in rows]


@pytest.mark.parametrize("given, lines", [
    ([], []),
    (flows(("/d/a.bin", 0, 1)), ["flow: /d/a.bin: step 0 → step 1"]),
    (flows(("/d/a.bin", 0, 1), ("/d/b.bin", 0, 1)),  # two files: each its own line
     ["flow: /d/a.bin: step 0 → step 1", "flow: /d/b.bin: step 0 → step 1"]),
    (flows(("/d/p-002", 0, 1), ("/d/p-000", 0, 1), ("/d/p-001", 0, 1)),
     ["flow: 3 files in /d/ (p-000 … p-002): step 0 → step 1"]),
    # another pair of steps, or another folder, is another flow
    (flows(("/d/p-0", 0, 1), ("/d/p-1", 0, 1), ("/d/p-2", 0, 1), ("/d/p-3", 1, 2), ("/e/x", 0, 1)),
     ["flow: 3 files in /d/ (p-0 … p-2): step 0 → step 1", "flow: /d/p-3: step 1 → step 2",
      "flow: /e/x: step 0 → step 1"]),
    (flows(("rel.bin", 0, 1)), ["flow: rel.bin: step 0 → step 1"]),  # a name without a folder
])
def test_flow_lines(given, lines):
    assert flow_lines(given) == lines
