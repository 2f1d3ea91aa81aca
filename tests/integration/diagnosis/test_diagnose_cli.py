"""`iolens diagnose` on the command line: output, JSON shape, thresholds, config files, exit codes."""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys

import pytest

from support.corpus import LOGS

GEN = LOGS / "generated"


def iolens(*args, env=None):
    """Run the installed CLI as a user would (stdout piped, so no colours or progress bar)."""
    return subprocess.run([sys.executable, "-m", "iolens.cli.main", *map(str, args)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, **(env or {})})


pytestmark = pytest.mark.usefixtures("logs_dir")  # every test here reads the real logs


@pytest.mark.smoke
def test_json_is_the_documented_shape_and_nothing_else():
    r = iolens("diagnose", "--json", GEN / "small_indep_shared.darshan")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)  # stdout holds the JSON only
    assert set(data) == {"log", "schema_version", "measures", "insights"}
    assert data["measures"]["io_time"] > 0 and data["measures"]["slowest_rank_io_time"]["MPI-IO"] > 0
    assert data["schema_version"] == 3 and data["log"].endswith("small_indep_shared.darshan")
    first = data["insights"][0]
    assert set(first) == {"code", "key_metric", "severity", "title", "summary", "evidence", "recommendations",
                          "source", "partial"}
    assert first["key_metric"] in first["evidence"]["metrics"]
    assert set(first["evidence"]) == {"ranks", "files", "time_window", "metrics"}
    assert {i["code"] for i in data["insights"]} >= {"SMALL_IO", "NO_COLLECTIVE_IO"}


def test_json_lists_info_insights_too():
    data = json.loads(iolens("diagnose", "--json", GEN / "collective_2phase.darshan").stdout)
    assert [(i["code"], i["severity"]) for i in data["insights"]] == [("MPIIO_OVERHEAD", "critical"),
                                                                     ("COLLECTIVE_IO", "info")]


def test_terminal_output_when_piped_is_plain_and_most_severe_first():
    r = iolens("diagnose", GEN / "fill_rank0.darshan")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "\x1b[" not in out and "╭" not in out  # no colours, no boxes in a pipe
    assert out.index("[CRITICAL] SERIALIZED_IO") < out.index("[WARNING] REDUNDANT_WRITES")
    assert "MPI_File_write_at_all(fh, off, block, block_bytes, MPI_BYTE, MPI_STATUS_IGNORE);" in out
    assert "ranks: 0\n" in out


def test_healthy_log_says_so_and_all_shows_info():
    # MPIIO_OVERHEAD (95% of its MPI-IO time above the file system) silenced: the rest of the log is healthy
    quiet = ("-t", "mpiio_overhead_min_share=100%")
    r = iolens("diagnose", *quiet, GEN / "collective_2phase.darshan")
    assert r.returncode == 0
    assert "No problems found" in r.stdout and "COLLECTIVE_IO" not in r.stdout
    assert "1 informational insight hidden" in r.stdout
    r = iolens("diagnose", "--all", *quiet, GEN / "collective_2phase.darshan")
    assert "[INFO] COLLECTIVE_IO" in r.stdout and "ranks: 0, 1" in r.stdout


def test_threshold_option_changes_the_outcome():
    path = GEN / "small_indep_shared.darshan"
    base = {i["code"] for i in json.loads(iolens("diagnose", "--json", path).stdout)["insights"]}
    assert "SMALL_IO" in base
    r = iolens("diagnose", "--json", "-t", "small_min_ops=100000", "--threshold", "no_collective_min_ops=1e6", path)
    assert r.returncode == 0, r.stderr
    after = {i["code"] for i in json.loads(r.stdout)["insights"]}
    assert "SMALL_IO" not in after and "NO_COLLECTIVE_IO" not in after


def test_config_file(tmp_path):
    cfg = tmp_path / "iolens.toml"
    cfg.write_text('[thresholds]\nsmall_request_bytes = "100"   # only tiny requests count as small\n'
                   'serialized_min_share = "99.5%"\n')
    data = json.loads(iolens("diagnose", "--json", "--config", cfg, GEN / "small_indep_shared.darshan").stdout)
    assert "SMALL_IO" not in {i["code"] for i in data["insights"]}
    data = json.loads(iolens("diagnose", "--json", "--config", cfg, GEN / "fill_rank0.darshan").stdout)
    assert "SERIALIZED_IO" not in {i["code"] for i in data["insights"]}
    # the command line wins over the file
    data = json.loads(iolens("diagnose", "--json", "--config", cfg, "-t", "serialized_min_share=0.5",
                             GEN / "fill_rank0.darshan").stdout)
    assert "SERIALIZED_IO" in {i["code"] for i in data["insights"]}


@pytest.mark.parametrize("args, message", [
    (["-t", "no_such_threshold=1"], "unknown threshold"),
    (["-t", "small_min_share"], "NAME=VALUE"),
    (["-t", "small_min_share=lots"], "cannot read"),
])
def test_bad_threshold_is_a_usage_error(args, message):
    r = iolens("diagnose", *args, GEN / "fill_rank0.darshan")
    assert r.returncode == 2
    assert message in r.stderr and r.stdout == ""


def test_bad_config_file_is_a_usage_error(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text("[thresholds]\nsmall_min_share = \n")
    r = iolens("diagnose", "--config", cfg, GEN / "fill_rank0.darshan")
    assert r.returncode == 2 and "--config" in r.stderr


@pytest.mark.smoke
def test_unreadable_log_exits_2_with_one_line(tmp_path):
    junk = tmp_path / "junk.darshan"
    junk.write_bytes(b"not a darshan log at all" * 10)
    r = iolens("diagnose", junk)
    assert r.returncode == 2
    assert r.stderr.startswith("iolens: error:") and len(r.stderr.strip().splitlines()) == 1
    r = iolens("diagnose", tmp_path / "missing.darshan")
    assert r.returncode == 2


def test_list_thresholds():
    r = iolens("diagnose", "--list-thresholds")
    assert r.returncode == 0
    assert "small_request_bytes = 102400" in r.stdout and "serialized_min_share = 0.5" in r.stdout
    # sizes as a user types them back with -t, never 1.04858e+06
    assert "large_request_bytes = 1048576 (1 MiB)" in r.stdout and "fs_ost_bandwidth = 1073741824 (1 GiB)" in r.stdout
    assert not re.search(r"= [\d.]+e[+-]\d", r.stdout)


def test_json_is_the_same_run_after_run():
    """Stable output: ranks and files tied on bytes or counts are listed in one order, whatever the hash
    seed (a diff of two runs' JSON must show nothing)."""
    log = GEN / "fill_rank0.darshan"
    outs = {iolens("diagnose", "--json", log, env={"PYTHONHASHSEED": str(seed), "POLARS_MAX_THREADS": "2"}).stdout
            for seed in (1, 2, 3)}
    assert len(outs) == 1


def test_readme_names_every_key_of_diagnose_json():
    """The README's one-paragraph schema of `diagnose --json` names every key the output has, at every level."""
    from support.corpus import REPO

    out = json.loads(iolens("diagnose", "--json", GEN / "fill_rank0.darshan").stdout)
    readme = (REPO / "README.md").read_text()
    para = " ".join(readme[readme.index("`iolens diagnose --json`: "):].split("documented in")[0].split())
    insight = out["insights"][0]
    keys = {*out, *insight, *insight["evidence"], *(k for r in insight["recommendations"] for k in r)}
    assert sorted(k for k in keys if not re.search(rf"\b{k}\b", para)) == []
