"""A real log's findings print their counts in the right number: `on 1 file`, never `file(s)`."""
from __future__ import annotations

import json

from support.cli import run_main


def test_small_writes_on_one_file_say_one_file(logs_dir):
    log = logs_dir / "pairs/small_indep.darshan"
    doc = json.loads(run_main("diagnose", log, "--json", "--all").stdout)
    small = [i for i in doc["insights"] if i["code"] == "SMALL_IO"]
    assert small and len(small[0]["evidence"]["files"]) == 1
    text = run_main("diagnose", log, "--all").stdout
    assert " on 1 file;" in text
    assert "(s)" not in text  # the counts this log's findings print are all known


def test_collective_writes_name_their_aggregators_in_the_plural(logs_dir):
    text = run_main("diagnose", logs_dir / "pairs/small_coll.darshan", "--all").stdout
    assert "on 1 file: two-phase I/O gathers the data on 2 aggregators" in text
    assert "file(s)" not in text and "aggregator(s)" not in text
