"""`iolens diagnose` names a finding's evidence after the log's tracer; `--json` keeps the documented enum."""
from __future__ import annotations

import json

from support.cli import run_main


def test_recorder_findings_name_the_recorder_trace(logs_dir):
    trace = logs_dir / "recorder/shared_header"
    text = run_main("diagnose", trace).stdout
    sources = [line.strip() for line in text.splitlines() if line.strip().startswith("source:")]
    assert sources and all(s.startswith("source: calls of the Recorder trace") for s in sources)
    assert "source: dxt" not in text
    doc = json.loads(run_main("diagnose", trace, "--json").stdout)
    assert {i["source"] for i in doc["insights"]} == {"dxt"}  # the --json enum is unchanged


def test_darshan_findings_keep_the_enum_word(logs_dir):
    text = run_main("diagnose", logs_dir / "generated2/one_late_rank.darshan").stdout
    assert "source: dxt" in text and "Recorder" not in text
