"""`iolens jobs` on a data loader's job: its shards' flow is one line; --json still lists every file."""
from __future__ import annotations

import json

from support.cli import run_main


def test_shards_passing_between_two_steps_are_one_line(logs_dir, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # a piped page wide enough for the line (xdist's workers set 80)
    folder = logs_dir / "workflows/loader"
    flows = json.loads(run_main("jobs", folder, "--json").stdout)["jobs"][0]["flows"]
    assert len(flows) > 3 and len({(f["from"], f["to"]) for f in flows}) == 1
    names = sorted(f["file"].rsplit("/", 1)[1] for f in flows)
    lines = [line for line in run_main("jobs", folder).stdout.splitlines() if line.startswith("flow:")]
    assert lines == [f"flow: {len(flows)} files in {flows[0]['file'].rsplit('/', 1)[0]}/ "
                     f"({names[0]} … {names[-1]}): step {flows[0]['from']} → step {flows[0]['to']}"]
