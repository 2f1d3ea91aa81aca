"""Nothing silent (issue 31, item 5): a log whose I/O went through modules iolens does not model (the shared
DFS/DAOS log) or that holds nothing (Darshan's empty log, `mpiexec`'s own log in a workflow) never reads
"No problems found.": `diagnose` says what it skipped and how much I/O that holds, or that the log is empty,
on the terminal (with --all too) and in --json; a fleet row says so in its columns and on the page."""
from __future__ import annotations

import json
import shutil

import pytest

from iolens.analysis.diagnosis import JSON_SCHEMA

from support.cli import run_main
from support.corpus import LOGS

DAOS = LOGS / "public/darshan-logs/ior_daos/snyder_ior-DFS_id4681120-53379_5-8-15060-3270540599978592154_1.darshan"
POSIX_TWIN = LOGS / "public/darshan-logs/ior_daos/snyder_ior-POSIX_id1057716-202103_11-8-64415-6936117869459351096_1.darshan"
EMPTY = LOGS / "public/darshan-logs/empty_log/empty_log.darshan"
MPIEXEC = LOGS / "workflows/pipeline/simulate-5_0_mpiexec_id700101-3708_11-24-79683-17896216278233491692_1.darshan"
MiB = 1 << 20


@pytest.mark.parametrize("flags", [(), ("--all",)], ids=["default", "all"])
def test_a_dfs_log_says_what_it_skipped_and_how_much(logs_dir, flags):
    out = run_main("diagnose", *flags, DAOS).stdout
    assert "No problems found." not in out
    assert ("No problems found in the I/O iolens reads, but DFS (1 record, 64 reads, 64 writes, 16 MiB read, "
            "16 MiB written) and DAOS (3 records, 71 reads, 65 writes, 16 MiB read, 16 MiB written) went through "
            "modules iolens does not model: that I/O was skipped, not judged healthy.") in out


def test_the_json_lists_the_skipped_modules_and_validates(logs_dir):
    jsonschema = pytest.importorskip("jsonschema")
    doc = json.loads(run_main("diagnose", "--json", DAOS).stdout)
    jsonschema.validate(doc, JSON_SCHEMA)
    dfs, daos = doc["skipped"]
    # the numbers darshan-parser prints for these records (DFS_READS, DFS_BYTES_READ, ...)
    assert dfs["module"] == "DFS" and (dfs["records"], dfs["reads"], dfs["writes"]) == (1, 64, 64)
    assert dfs["bytes_read"] == dfs["bytes_written"] == 16 * MiB
    assert daos["module"] == "DAOS" and daos["records"] == 3 and daos["bytes_written"] >= 16 * MiB
    assert 0 < dfs["io_time"] < 1 and "empty" not in doc
    # the same benchmark over POSIX: every module read, nothing to add
    twin = json.loads(run_main("diagnose", "--json", POSIX_TWIN).stdout)
    assert "skipped" not in twin and "empty" not in twin


@pytest.mark.parametrize("path", [EMPTY, MPIEXEC], ids=["empty_log", "mpiexec"])
def test_an_empty_log_says_it_is_empty(logs_dir, path):
    for flags in ((), ("--all",)):
        out = run_main("diagnose", *flags, path).stdout
        assert "No problems found" not in out
        assert "The log is empty: it holds no I/O record (nothing to diagnose)." in out
    doc = json.loads(run_main("diagnose", "--json", path).stdout)
    assert doc["empty"] is True and doc["insights"] == [] and "skipped" not in doc


def test_a_log_with_findings_and_skipped_io_says_both(logs_dir):
    """Findings shown (sensitive thresholds make the DFS log's STDIO writes one), and the skipped I/O after."""
    out = run_main("diagnose", "-t", "stdio_min_share=1%", "-t", "stdio_min_bytes=1", "-t", "min_stake_floor=0",
                   "-t", "min_runtime_share=0", "-t", "min_io_time_share=0", DAOS).stdout
    if "[WARNING]" not in out and "[CRITICAL]" not in out:
        pytest.skip("no finding at these thresholds on this log")
    assert out.index("Not diagnosed: DFS (1 record") > out.index("source:")


def test_a_fleet_row_marks_skipped_io_and_empty_logs(logs_dir, tmp_path):
    from iolens.fleet import store as fleet_store
    from iolens.fleet.build import build

    for p in (DAOS, EMPTY, LOGS / "generated/fill_rank0.darshan"):
        shutil.copy(p, tmp_path / p.name)
    build([tmp_path], tmp_path / "store", scheduler="sync")
    jobs = fleet_store.read(tmp_path / "store", "jobs").sort("path")
    rows = {r["path"].rsplit("/", 1)[-1]: r for r in jobs.iter_rows(named=True)}
    assert rows[DAOS.name]["skipped_modules"] == "DFS,DAOS" and not rows[DAOS.name]["empty"]
    assert rows[DAOS.name]["skipped_bytes"] >= 64 * MiB  # 16 MiB each way through DFS and through DAOS
    assert rows[EMPTY.name]["empty"] and rows[EMPTY.name]["skipped_modules"] is None
    fill = rows["fill_rank0.darshan"]
    assert fill["skipped_modules"] is None and fill["skipped_bytes"] is None and not fill["empty"]


@pytest.mark.browser
def test_the_fleet_page_marks_them(browser, logs_dir, tmp_path):
    pytest.importorskip("playwright.sync_api")
    from iolens import fleet_report
    from iolens.fleet.build import build
    from support.browser import LoadedPage

    for p in (DAOS, EMPTY, LOGS / "generated/fill_rank0.darshan"):
        shutil.copy(p, tmp_path / p.name)
    build([tmp_path], tmp_path / "store", scheduler="sync")
    fleet_report(tmp_path / "store", tmp_path / "fleet.html")
    p = LoadedPage(browser, tmp_path / "fleet.html")
    chips = p.page.inner_text("#fleet-chips")
    assert "logs with skipped I/O (DFS, DAOS…) 1 (64 MiB)" in chips and "empty logs 1" in chips
    rows = p.page.locator("#top-table tbody tr")
    cells = {rows.nth(k).locator("td").nth(8).inner_text(): rows.nth(k).locator("td").nth(7).inner_text()
             for k in range(rows.count())}
    assert cells[DAOS.name] == "DFS,DAOS" and cells[EMPTY.name] == "empty" and cells["fill_rank0.darshan"] == ""
    assert p.errors == []
    p.close()


@pytest.mark.browser
@pytest.mark.parametrize("path, said", [
    (DAOS, "No problems found in the I/O iolens reads, but DFS (1 record"),
    (EMPTY, "The log is empty: it holds no I/O record (nothing to diagnose)."),
], ids=["dfs", "empty"])
def test_the_report_page_says_it_too(browser, logs_dir, tmp_path, path, said):
    pytest.importorskip("playwright.sync_api")
    from support.browser import LoadedPage

    run_main("report", path, "-o", tmp_path / "page.html")
    p = LoadedPage(browser, tmp_path / "page.html")
    text = p.page.inner_text("#insights")
    assert said in text and "No problems found." not in text
    assert p.errors == []
    p.close()
