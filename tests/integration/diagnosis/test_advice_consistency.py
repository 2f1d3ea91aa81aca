"""What `iolens diagnose` advises reads as one story on the real logs: the helpful fixes first, the same fix
the same figure, a saving no larger than the cost it names, aggregators and projections the log supports."""
from __future__ import annotations

import json

import pytest

from support.cli import run_iolens
from support.corpus import LOGS

pytestmark = pytest.mark.usefixtures("logs_dir")

RANDOM_SMALL = LOGS / "generated2" / "random_small_reads.darshan"
SLOWER = "Likely slower here: "


def _json(*args) -> dict:
    return json.loads(run_iolens("diagnose", "--json", *args).stdout)


def test_likely_slower_recommendations_come_last_in_json_and_terminal():
    insights = _json(RANDOM_SMALL)["insights"]
    small = next(i for i in insights if i["code"] == "SMALL_IO")
    titles = [r["title"] for r in small["recommendations"]]
    assert any(t.startswith(SLOWER) for t in titles) and not titles[0].startswith(SLOWER)
    for i in insights:
        slower = [r["title"].startswith(SLOWER) for r in i["recommendations"]]
        assert slower == sorted(slower), (i["code"], slower)  # no helpful one after a slower one
    text = run_iolens("diagnose", RANDOM_SMALL).stdout
    block = text.split("SMALL_IO:", 1)[1].split("\n[", 1)[0]
    assert "  1. Aggregate small reads" in block and f"  4. {SLOWER}" in block


def test_the_same_fix_on_the_same_requests_saves_the_same_and_as_above_says_so():
    insights = {i["code"]: i for i in _json(RANDOM_SMALL)["insights"]}
    aggregate = {code: next(r for r in insights[code]["recommendations"] if r["title"].startswith("Aggregate small"))
                 for code in ("SMALL_IO", "RANDOM_ACCESS")}
    # RANDOM_ACCESS prices it at its requests' median size (1 KiB reads, as SMALL_IO's), not an assumed 50 KiB
    assert insights["RANDOM_ACCESS"]["evidence"]["metrics"]["median_request_bytes"] == 1024
    assert "1 KiB request" in aggregate["RANDOM_ACCESS"]["saving_basis"]
    assert aggregate["RANDOM_ACCESS"]["expected_saving"] == pytest.approx(aggregate["SMALL_IO"]["expected_saving"])
    text = run_iolens("diagnose", RANDOM_SMALL).stdout
    block = text.split("] RANDOM_ACCESS:", 1)[1].split("\n[", 1)[0]
    saving = "expected saving here: ≈ 30.9 ms"
    assert text.split("SMALL_IO:", 1)[1].count(saving) >= 1 and block.count(saving) == 2
    assert "(as under SMALL_IO above)" in block and "(as above)" not in text


def test_a_process_without_mpi_is_not_projected_to_more_ranks():
    log = LOGS / "public" / "darshan-logs" / "nonmpi_dxt_anonymized" / "nonmpi_dxt_anonymized.darshan"
    insights = _json(log)["insights"]
    costed = [i for i in insights if "Cost: ≈" in i["summary"]]
    assert costed  # SMALL_IO and RANDOM_ACCESS still say what they cost here, and the model
    for i in costed:
        assert "not an MPI job: no projection to more ranks" in i["summary"], i["code"]
        assert "at 1,024 ranks" not in i["summary"] and "projected_time_s" not in i["evidence"]["metrics"]
        assert "model_request_latency_s" in i["evidence"]["metrics"]
    # an MPI job of 6 ranks still is
    assert "at 1,024 ranks" in next(i for i in _json(RANDOM_SMALL)["insights"] if i["code"] == "SMALL_IO")["summary"]


def test_a_fix_saves_no_more_than_the_cost_its_finding_names():
    insights = _json(LOGS / "generated" / "fill_rank0.darshan")["insights"]
    rewrites = next(i for i in insights if i["code"] == "REDUNDANT_WRITES")
    cost = rewrites["evidence"]["metrics"]["busiest_rank_redundant_time_s"]
    once = next(r for r in rewrites["recommendations"] if r["title"] == "Write each region once")
    # rank 0's fill, overwritten by the data, is its cost and what writing once saves: one measure (2.53 s)
    assert once["expected_saving"] == pytest.approx(cost, rel=0.01) and cost > 2.0
    assert all(r["expected_saving"] is None or r["expected_saving"] <= cost * 1.001 for r in rewrites["recommendations"])


def test_the_counter_estimate_of_aggregators_says_what_the_log_records():
    log = LOGS / "public" / "darshan-logs" / "imbalanced_io" / "imbalanced-io.darshan"
    insights = _json("--all", log)["insights"]
    writes = next(i for i in insights if i["code"] == "COLLECTIVE_IO" and "writes" in i["title"])
    # rank 0 moved all of the shared file's POSIX bytes (the log's point): one aggregator, and the summary says
    # so, with the file's single Lustre stripe
    assert writes["evidence"]["metrics"]["estimated_aggregators"] == 1
    assert "1 aggregator (estimated) reaches" in writes["title"] and "aggregator(s)" not in writes["title"]
    summary = writes["summary"]
    assert "rank 0, the slowest, moved 100% of the POSIX bytes" in summary
    assert "1 Lustre stripe" in summary and "cb_nodes" not in summary  # the log's hints are Darshan's own
