"""Cross-rank conflicts on real logs: the CONFLICT insights of known patterns, the check on the trace's columns
against the sweep over the table, the CLI's text and JSON. (The sweep itself: unit/test_conflict_sweep.py.)"""
from __future__ import annotations

import pytest

import iolens
from iolens.analysis.diagnosis import diagnose

from support.corpus import all_logs, log_id


def conflict_insights(log):
    return [i for i in diagnose(log, strict=True) if i.code == "CONFLICT"]


SMALL = [p for p in all_logs() if p.stat().st_size < (2 << 20)]


@pytest.mark.parametrize("path", SMALL, ids=log_id)
def test_diagnosis_on_the_trace_columns_says_what_the_table_says(path):
    """A Darshan log's CONFLICT check runs on the trace's numpy columns: the same insights, word for word, as
    the sweep over its segments table."""
    from iolens.analysis.diagnosis import Context, Thresholds
    from iolens.analysis.diagnosis.findings import conflict

    log = iolens.read(str(path))
    if not log.has_dxt:
        return
    on_columns = [i.to_dict() for i in conflict.report(Context(log, Thresholds({})))]
    assert on_columns == [i.to_dict() for i in conflict._check_table(Context(log, Thresholds({})))]


def test_shared_header_conflict(read_log):
    log = read_log("generated2/shared_header_conflict")
    found = conflict_insights(log)
    warn = [i for i in found if i.severity == "warning"]
    info = [i for i in found if i.severity == "info"]
    assert len(warn) == 1 and len(info) == 1
    # the README: header writes of ranks 1 and 3 overlap in time (0.10617–0.11101 s and 0.10597–0.10838 s)
    assert warn[0].evidence.ranks == [1, 3]
    assert warn[0].evidence.metrics["write_after_write"] == 1
    t0, t1 = warn[0].evidence.time_window
    assert t0 == pytest.approx(0.10597, abs=1e-4) and t1 == pytest.approx(0.11101, abs=1e-4)
    assert "bytes 0–4,096" in warn[0].summary and "MPI-IO write" in warn[0].summary
    # the other header pairs are ordered, plus rank 0 reading rank 1's first MiB after the barrier
    assert info[0].evidence.metrics["write_after_write"] == 5
    assert info[0].evidence.metrics["read_after_write"] == 1
    assert "not verified" in info[0].summary and "synchronised" in info[0].summary


def test_fill_then_overwrite_is_ordered(read_log):
    log = read_log("generated/fill_rank0")
    found = conflict_insights(log)
    assert [i.severity for i in found] == ["info"]
    m = found[0].evidence.metrics
    # ranks 1-7 each overwrite their 32 MiB block, which rank 0 filled in 1 MiB writes: 7 x 32 pairs
    assert m["write_after_write"] == 7 * 32 and m["bytes"] == 7 * 32 << 20
    assert found[0].evidence.ranks == list(range(8))


@pytest.mark.parametrize("name", ["generated/collective_2phase", "generated/small_indep_shared",
                                  "generated/file_per_process", "generated2/healthy_large_sequential"])
def test_no_cross_rank_overlap_stays_quiet(read_log, name):
    assert conflict_insights(read_log(name)) == []


def test_diagnose_json_and_text_show_conflicts(logs_dir):
    import json
    import subprocess
    import sys
    from pathlib import Path

    iolens_bin = str(Path(sys.executable).parent / "iolens")
    log = logs_dir / "generated2/shared_header_conflict.darshan"
    out = json.loads(subprocess.run([iolens_bin, "diagnose", "--json", str(log)], capture_output=True, text=True,
                                    check=True).stdout)
    found = {i["severity"]: i for i in out["insights"] if i["code"] == "CONFLICT"}
    assert set(found) == {"warning", "info"}
    assert found["warning"]["evidence"]["files"] == ["/tmp/ioscratch/g2/c.dat"]
    assert found["warning"]["source"] == "dxt" and found["warning"]["evidence"]["metrics"]["pairs"] == 1
    text = subprocess.run([iolens_bin, "diagnose", str(log)], capture_output=True, text=True, check=True).stdout
    assert "CONFLICT" in text and "at the same time" in text
    assert "one after the other" not in text  # info-level: shown with --all only


def test_diagnosis_says_when_counts_are_lower_bounds(read_log, monkeypatch):
    from iolens.analysis import conflicts as sweep

    monkeypatch.setattr(sweep, "MAX_CANDIDATES", 1)
    found = conflict_insights(read_log("generated2/shared_header_conflict"))
    assert found and all(i.partial and "lower bounds" in i.summary for i in found)
