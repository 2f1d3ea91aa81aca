"""`iolens compare` on the real before/after pairs (../shared/logs/pairs/README.md says what each should
conclude) and on fill_rank0 against the same run without its fill phase (derived in tests/support/derive_nofill.py)."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import darshan
import pytest
from rich.console import Console

import iolens
from iolens.analysis.run_config import match_files

from support.corpus import LOGS
from support.cli import run_iolens

PAIRS = LOGS / "pairs"
GEN = LOGS / "generated"


pytestmark = pytest.mark.usefixtures("logs_dir")  # every test here reads the real logs


def pair(a, b, **kw):
    return iolens.compare(PAIRS / f"{a}.darshan", PAIRS / f"{b}.darshan", **kw)


def codes(diff, status):
    return {i["code"] for i in diff[status]}


def slowest_mpiio(path):
    """The oracle: PyDarshan's job I/O time (docs/measures.md): the MPI-IO slowest-rank time of the one
    shared data file, plus STDIO's slowest rank (its own records' times, plus shared records' slowest)."""
    rep = darshan.DarshanReport(str(path), read_all=True)
    mpiio = float(rep.records["MPI-IO"].to_df()["fcounters"]["MPIIO_F_SLOWEST_RANK_TIME"].max())
    stdio = 0.0
    if "STDIO" in rep.records:
        df = rep.records["STDIO"].to_df()
        f, rank = df["fcounters"], df["fcounters"]["rank"]
        t = sum(f[c].clip(lower=0) for c in ("STDIO_F_READ_TIME", "STDIO_F_WRITE_TIME", "STDIO_F_META_TIME"))
        own = t[rank >= 0].groupby(rank[rank >= 0]).sum()
        stdio = (float(own.max()) if len(own) else 0.0) + float(f["STDIO_F_SLOWEST_RANK_TIME"][rank < 0].sum())
    return mpiio + stdio


def iolens_cli(*args):
    return subprocess.run([sys.executable, "-m", "iolens.cli.main", *map(str, args)], capture_output=True,
                          text=True, timeout=120, env={**os.environ})


# --- the verdicts the pairs' README asks for ------------------------------------------------------

def test_collective_buffering_fix_is_faster_and_small_writes_are_gone():
    r = pair("small_indep", "small_coll")
    v = r["runs"][1]["verdict"]
    assert v["verdict"] == "faster"
    expected = slowest_mpiio(PAIRS / "small_indep.darshan") / slowest_mpiio(PAIRS / "small_coll.darshan")
    assert v["speedup"] == pytest.approx(expected, rel=1e-6) and 1.8 < v["speedup"] < 2.6  # "about 2×"
    diff = r["insights"][1]
    assert {"SMALL_IO", "NO_COLLECTIVE_IO"} <= codes(diff, "resolved")
    small = next(i for i in diff["resolved"] if i["code"] == "SMALL_IO")
    assert (small["before"], small["after"]) == (60_000, 0)  # README: 60,000 → a few large ones
    assert "60,000 → 0" in small["summary"]
    collective = next(i for i in diff["new"] if i["code"] == "COLLECTIVE_IO")
    assert "2 aggregator" in collective["summary"]
    posix = [run["layers"]["POSIX"] for run in r["runs"]]
    assert posix[1]["writes"] < 100 and posix[0]["writes"] == 60_000
    # the job's writes: POSIX's and the program's lines to stdout (STDIO, a path of its own: measures.job_bytes)
    assert [run["writes"] for run in r["runs"]] == [p["writes"] + run["layers"]["STDIO"]["writes"]
                                                    for p, run in zip(posix, r["runs"])]
    share = next(c for c in r["config"] if c["key"] == "collective_share")
    assert share["values"] == [0.0, 1.0] and share["changed"] == [False, True]


def test_collective_metadata_beside_independent_writes_is_not_called_collective_buffering():
    """pairs2: HDF5's collective metadata adds 4 collective writes beside 800 independent ones: the diff says
    so, not 'collective buffering now writes 803 × 512 B from 2 aggregator(s)'."""
    runs = [LOGS / "pairs2" / f"{n}.darshan" for n in ("h5meta2_noflush", "h5meta2_noflush_collmeta")]
    r = iolens.compare(*runs)
    collective = next(i for i in r["insights"][1]["new"] if i["code"] == "COLLECTIVE_IO")
    assert "collective buffering" not in collective["summary"]
    assert collective["after"] == 4 and "4 collective MPI-IO writes" in collective["summary"]


def test_the_opposite_change_is_slower_and_names_the_new_insights():
    r = pair("small_coll", "small_indep")
    assert r["runs"][1]["verdict"]["verdict"] == "slower"
    assert {"SMALL_IO", "NO_COLLECTIVE_IO"} <= codes(r["insights"][1], "new")


def test_pattern_fix_without_measurable_speedup_is_no_real_change():
    r = pair("shifted", "aligned")
    assert r["runs"][1]["verdict"]["verdict"] == "no real change"
    assert r["runs"][1]["io_time"] > r["runs"][0]["io_time"]  # even slightly slower here: still noise
    assert {"SMALL_IO", "MISALIGNED_IO"} <= codes(r["insights"][1], "resolved")
    assert not codes(r["insights"][1], "new")


def test_same_configuration_twice_is_no_real_change_despite_1_3x():
    r = pair("repeat_1", "repeat_2")
    run = r["runs"][1]
    assert 1.25 < run["io_time"] / r["runs"][0]["io_time"] < 1.4  # the README's 1.3× of noise
    assert run["verdict"]["verdict"] == "no real change"
    assert not any(r["insights"][1].values())
    assert not r["warnings"]
    rows = {c["key"]: c for c in r["config"]}
    assert rows["dxt"]["values"] == ["on", "on"] and rows["nprocs"]["values"] == [4, 4]
    assert not any(c["changed"][1] for key, c in rows.items() if key != "exe")  # only the file name differs
    # e.dat and f.dat: the one data file of each run, matched as the same file
    assert [m["names"] for m in r["files"]["matched"]] == [["/tmp/ioscratch/p/e.dat", "/tmp/ioscratch/p/f.dat"]]
    assert r["files"]["unmatched"] == []
    # one count of files in both tables: the data file, not the standard streams
    assert [run["files"] for run in r["runs"]] == rows["files"]["values"] == [1, 1]


def test_repeated_baseline_runs_set_the_noise_band_from_their_spread():
    r = iolens.compare(PAIRS / "repeat_1.darshan", PAIRS / "repeat_2.darshan", PAIRS / "aligned.darshan",
                       baseline_runs=2, noise_ratio=1.1)
    spread = slowest_mpiio(PAIRS / "repeat_2.darshan") / slowest_mpiio(PAIRS / "repeat_1.darshan")
    assert r["rule"]["baseline_spread"] == pytest.approx(spread, rel=1e-6)
    assert r["rule"]["noise_ratio"] == pytest.approx(spread, rel=1e-6)  # wider than the 1.1 asked for
    assert [run["baseline"] for run in r["runs"]] == [True, True, False]
    assert r["runs"][1]["verdict"]["verdict"] == "no real change"
    # with a 1.1× band alone, aligned (1.46× the first run's time) would be called slower
    assert iolens.compare(PAIRS / "repeat_1.darshan", PAIRS / "aligned.darshan",
                          noise_ratio=1.1)["runs"][1]["verdict"]["verdict"] == "slower"


def test_derived_no_fill_log_is_a_valid_darshan_log(nofill):
    """PyDarshan (the oracle) reads it: rank 0 writes its own 32 MiB like every rank, the file once."""
    rep = darshan.DarshanReport(str(nofill), read_all=True)
    posix = rep.records["POSIX"].to_df()["counters"]
    assert int(posix["POSIX_WRITES"].sum()) == 256 and int(posix["POSIX_BYTES_WRITTEN"].sum()) == 256 << 20
    dxt = rep.records["DXT_POSIX"].to_df()
    assert sorted(len(r["write_segments"]) for r in dxt) == [32] * 8
    assert max(float(r["write_segments"]["end_time"].max()) for r in dxt) < 1.0  # the fill's 2.5 s are gone


def test_fill_phase_removed_is_faster_and_serialization_resolved(nofill):
    r = iolens.compare(GEN / "fill_rank0.darshan", nofill, labels=["fill", "no fill"])
    assert [run["label"] for run in r["runs"]] == ["fill", "no fill"]
    assert r["runs"][1]["verdict"]["verdict"] == "faster"
    assert {"SERIALIZED_IO", "REDUNDANT_WRITES"} <= codes(r["insights"][1], "resolved")
    posix = [run["layers"]["POSIX"]["bytes_written"] for run in r["runs"]]
    assert posix[1] * 2 == posix[0]  # the file is written once


def test_adding_a_fill_phase_is_slower_with_the_new_insight_named(nofill):
    r = iolens.compare(nofill, GEN / "fill_rank0.darshan")
    assert r["runs"][1]["verdict"]["verdict"] == "slower"
    new = {i["code"]: i for i in r["insights"][1]["new"]}
    assert "SERIALIZED_IO" in new and new["SERIALIZED_IO"]["file"] == "/tmp/ioscratch/fill_rank0.dat"
    assert "98%" in new["SERIALIZED_IO"]["summary"]


def test_different_nprocs_and_applications_are_said_at_the_top():
    r = pair("repeat_1", "small_coll")
    assert any("processes" in w and "4" in w and "2" in w for w in r["warnings"])
    assert any("different applications" in w for w in r["warnings"])
    out = iolens_cli("compare", PAIRS / "repeat_1.darshan", PAIRS / "small_coll.darshan").stdout
    assert out.splitlines()[0].startswith("note: different applications")


# --- file matching ---------------------------------------------------------------------------------

def test_files_match_by_path_then_by_pattern_and_unmatched_are_listed():
    runs = [["/s/job_1234/out.h5", "/s/job_1234/ckpt_0001.dat", "/s/common.cfg", "/s/only_a.log", "/s/x/a"],
            ["/s/job_98765/out.h5", "/s/job_98765/ckpt_0002.dat", "/s/common.cfg", "/s/x/b", "/s/x/c"]]
    got = match_files(runs)
    pairs = {tuple(m["names"]) for m in got["matched"]}
    assert ("/s/common.cfg", "/s/common.cfg") in pairs
    assert ("/s/job_1234/out.h5", "/s/job_98765/out.h5") in pairs
    assert ("/s/job_1234/ckpt_0001.dat", "/s/job_98765/ckpt_0002.dat") in pairs
    # /s/x holds one file in the first run but two in the second: ambiguous, so listed, not guessed
    assert {(u["run"], u["name"]) for u in got["unmatched"]} == {(0, "/s/only_a.log"), (0, "/s/x/a"),
                                                                 (1, "/s/x/b"), (1, "/s/x/c")}


# --- output ------------------------------------------------------------------------------------------

def test_json_has_the_documented_keys():
    r = iolens_cli("compare", "--json", PAIRS / "small_indep.darshan", PAIRS / "small_coll.darshan")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert set(data) == {"schema_version", "rule", "warnings", "runs", "config", "insights", "files"}
    assert data["schema_version"] == 1 and data["insights"][0] is None
    run = data["runs"][1]
    assert {"label", "path", "exe", "baseline", "run_time", "io_time", "layers", "bytes_read", "bytes_written",
            "reads", "writes", "request_sizes", "meta_time", "bandwidth", "files", "ranks", "ratio",
            "verdict", "counts", "dxt_coverage", "dxt_truncated", "tracer", "loop"} == set(run)
    assert run["tracer"] == "darshan" and set(data["files"]) == {"matched", "unmatched", "bytes"}
    assert run["loop"] is None  # a Darshan log has no spans: no training loop
    assert run["ratio"]["io_time"] == pytest.approx(run["io_time"] / data["runs"][0]["io_time"])
    assert set(data["insights"][1]) == {"resolved", "new", "still", "file_in_one_run"}
    item = data["insights"][1]["resolved"][0]
    assert set(item) == {"code", "file", "title", "severity", "metric", "what", "unit", "before", "after",
                         "summary", "time_window", "ranks", "label", "tone"}
    assert (item["label"], item["tone"]) == ("resolved", "good")  # a problem fixed: green
    assert {"small_writes", "independent_mpiio_writes", "misaligned_requests", "small_requests",
            "random_reads", "fsyncs"} <= set(run["counts"])
    # the same structure from Python
    assert iolens.compare(PAIRS / "small_indep.darshan", PAIRS / "small_coll.darshan")["runs"][1]["verdict"] \
        == run["verdict"]


def test_terminal_fits_80_columns_and_keeps_row_names_whole():
    from iolens.views.terminal_compare import render_compare

    r = iolens.compare(*(PAIRS / f"{n}.darshan" for n in ("repeat_1", "repeat_2", "shifted", "aligned")),
                       labels=["first", "second", "misaligned 64 KiB", "aligned 4 MiB"])
    buf = io.StringIO()
    render_compare(r, Console(file=buf, width=80, color_system=None))
    lines = buf.getvalue().splitlines()
    assert max(len(line) for line in lines) <= 80
    text = buf.getvalue()
    for name in ("I/O time, slowest rank", "bytes written", "bandwidth", "MPI-IO", "POSIX", "verdict"):
        assert name in text
    for label in ("first", "second", "misaligned 64 KiB", "aligned 4 MiB"):
        assert label in text  # every run shown: the tables wrap, they do not drop runs
    assert text.count("no real change") == 3


def test_bad_input_is_one_line_and_non_zero(tmp_path):
    bad = tmp_path / "not.darshan"
    bad.write_bytes(b"hello")
    r = iolens_cli("compare", PAIRS / "repeat_1.darshan", bad)
    assert r.returncode == 2 and r.stderr.startswith("iolens: error:") and len(r.stderr.splitlines()) == 1
    r = iolens_cli("compare", PAIRS / "repeat_1.darshan")
    assert r.returncode == 2 and "at least two logs" in r.stderr and "Traceback" not in r.stderr
    r = iolens_cli("compare", "--baseline-runs", "2", PAIRS / "repeat_1.darshan", PAIRS / "repeat_2.darshan")
    assert r.returncode == 2 and "Traceback" not in r.stderr


@pytest.mark.smoke
def test_cli_writes_the_page_with_labels_and_a_sweep_chart(tmp_path):
    page = tmp_path / "sweep.html"
    r = iolens_cli("compare", "-q", "-o", page, "--label", "4 MiB", "--label", "64 KiB", "--label", "2 ranks",
                   PAIRS / "repeat_1.darshan", PAIRS / "shifted.darshan", PAIRS / "small_coll.darshan")
    assert r.returncode == 0, r.stderr
    assert f"page: {page}" in r.stdout
    assert any(line.startswith(" run ") and "4 MiB" in line for line in r.stdout.splitlines())
    html = page.read_text()
    assert 'id="sweep-card"' in html and html.count('class="run-timeline"') == 3
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html  # nothing fetched


# --- one headline number (the diagnosis' key_metric) and one access-pattern classifier -------------

def test_every_code_gets_a_key_line_when_present_on_both_sides():
    """compare takes the number from `Insight.key_metric`; every code, CONFLICT and CHECK_FAILED included,
    reads 'CODE: before → after what', never 'not flagged' or a bare metric name."""
    from iolens.analysis.compare import insight_diff
    from iolens.analysis.diagnosis import CODES, KEY_METRICS, Evidence, Insight

    def one(code, value):
        names = KEY_METRICS[code]
        metrics = {names[0]: value} if names else {}
        return Insight(code, "warning", f"{code} title", "", Evidence(files=["/f"], metrics=metrics))

    for code in CODES:
        diff = insight_diff([one(code, 3)], [one(code, 2)], {}, {})
        assert [r["code"] for r in diff["still"]] == [code] and not diff["resolved"] and not diff["new"]
        row = diff["still"][0]
        assert row["before"] is not None and row["after"] is not None, code
        assert row["what"] and row["what"] != row["metric"], code  # a label people read
        assert row["summary"].startswith(f"{code}: ") and " → " in row["summary"], code
        assert "not flagged" not in row["summary"], code
        assert row["metric"] == (KEY_METRICS[code][0] if KEY_METRICS[code] else "checks_failed")


def test_the_side_without_the_insight_is_measured_where_the_counters_can():
    """random_small_reads → healthy_large_sequential (generated2/README.md): the random reads are gone, and
    the healthy run's number is Darshan's non-sequential reads there (PyDarshan as the oracle), not
    'not flagged'."""
    g2 = LOGS / "generated2"
    r = iolens.compare(g2 / "random_small_reads.darshan", g2 / "healthy_large_sequential.darshan")
    resolved = {i["code"]: i for i in r["insights"][1]["resolved"]}
    assert {"RANDOM_ACCESS", "SMALL_IO"} <= set(resolved)
    posix = darshan.DarshanReport(str(g2 / "healthy_large_sequential.darshan"),
                                  read_all=True).records["POSIX"].to_df()["counters"]
    nonseq = int((posix["POSIX_READS"] - posix["POSIX_SEQ_READS"]).clip(lower=0).sum())
    random = resolved["RANDOM_ACCESS"]
    assert random["metric"] == "random_reads" and random["after"] == nonseq
    assert random["before"] >= 0.5 * 180_000  # README: 6 × 30,000 reads at random offsets
    assert f"→ {nonseq:,} random reads" in random["summary"]
    small = resolved["SMALL_IO"]
    assert small["metric"] == "small_requests" and small["before"] == 180_000 and small["after"] == 0


def test_access_pattern_rows_use_the_diagnosis_classifier():
    from iolens.analysis.access import PATTERNS

    g2 = LOGS / "generated2"
    r = iolens.compare(g2 / "healthy_large_sequential.darshan", g2 / "random_small_reads.darshan")
    rows = [c for c in r["config"] if c["key"].startswith("patterns:")]
    assert [c["values"] for c in rows] == [["consecutive", "random"]]  # each rank's own 32 MiB vs random
    assert rows[0]["changed"] == [False, True]
    # small_indep: 1-4 KiB records of 2 ranks interleaved (pairs/README.md); no dominant stride, yet the
    # ranks' records alternate: rank-interleaved, not "sequential"
    indep = next(c for c in pair("small_indep", "small_coll")["config"] if c["key"].startswith("patterns:"))
    assert indep["values"][0] == "rank-interleaved"
    # the pairs: every file's pattern is one of the classifier's names; aligned 4 MiB writes of each
    # rank's own block stay consecutive, as the 64 KiB ones were
    for a, b in (("small_indep", "small_coll"), ("shifted", "aligned")):
        rows = [c for c in pair(a, b)["config"] if "patterns:" in c["key"]]
        assert rows and all(v in PATTERNS for c in rows for v in c["values"])
    shifted = next(c for c in pair("shifted", "aligned")["config"] if c["key"].startswith("patterns:"))
    assert shifted["values"] == ["consecutive", "consecutive"] and not any(shifted["changed"])


def test_a_files_read_and_write_insights_of_one_code_are_kept_apart():
    """RANDOM_ACCESS is reported once per operation kind: random reads resolved while random writes stay
    must read as two rows, not one."""
    from iolens.analysis.compare import insight_diff
    from iolens.analysis.diagnosis.insight import Evidence, Insight

    def random(op, n):
        return Insight("RANDOM_ACCESS", "warning", f"random {op}s", "",
                       Evidence(files=["/d"], metrics={f"random_{op}s": n, "random_share": 1.0}))

    diff = insight_diff([random("read", 900), random("write", 500)], [random("write", 400)],
                        {}, {"random_reads": 3})
    assert [(r["metric"], r["before"], r["after"]) for r in diff["resolved"]] == [("random_reads", 900, 3)]
    assert [(r["metric"], r["before"], r["after"]) for r in diff["still"]] == [("random_writes", 500, 400)]


def test_recorder_traces_compare_and_unknown_counters_are_not_measured_as_zero():
    """Recorder traces (../shared/logs/recorder) read like Darshan logs; alignment and sequentiality are
    counters Recorder cannot know (-1), so the run-level measures built on them are null, never 0 or 'all'."""
    rec = LOGS / "recorder"
    r = iolens_cli("compare", "--json", rec / "seqwrite_mpiio", rec / "small_records")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    counts = data["runs"][1]["counts"]
    assert counts["misaligned_requests"] is None and counts["random_writes"] is None
    assert counts["small_requests"] == data["runs"][1]["writes"] > 0  # every write of small_records is small
    assert "SMALL_IO" in {i["code"] for i in data["insights"][1]["new"]}


def test_an_insight_naming_several_files_is_one_row():
    from iolens.analysis.compare import insight_diff
    from iolens.analysis.diagnosis.insight import Evidence, Insight

    stdio = Insight("STDIO_HEAVY", "warning", "stdio", "",
                    Evidence(files=["/a", "/b", "/c"], metrics={"stdio_bytes_share": 0.9}))
    diff = insight_diff([], [stdio], {}, {"stdio_bytes_share": None})
    assert [(r["file"], r["summary"]) for r in diff["new"]] == [("/a", "STDIO_HEAVY: not flagged → 90% of the "
                                                                       "bytes through stdio")]


def test_an_insight_present_on_both_sides_never_reads_not_flagged():
    """COLLECTIVE_IO headed by measured aggregators in one run and estimated ones in the other (no DXT)."""
    from iolens.analysis.compare import insight_diff
    from iolens.analysis.diagnosis.insight import Evidence, Insight

    def coll(metric, n):
        return Insight("COLLECTIVE_IO", "info", "cb", "", Evidence(files=["/f"], metrics={metric: n}))

    row, = insight_diff([coll("aggregators", 8)], [coll("estimated_aggregators", 4)], {}, {})["still"]
    assert (row["metric"], row["before"], row["after"]) == ("aggregators", 8, 4)
    assert "not flagged" not in row["summary"]


def test_files_row_counts_files_not_the_datasets_inside_them():
    # an HDF5 run names each dataset ("file.h5:/dset") in its H5D records: those are not files of the run
    path = LOGS / "public" / "pydarshan-examples" / "ior_hdf5_example.darshan"
    names = iolens.read(path).file_names().values()
    assert any(":/" in n for n in names)  # the log does name its dataset
    out = json.loads(run_iolens("compare", "--json", "-q", path, path).stdout)
    data = [n for n in names if n not in ("<STDIN>", "<STDOUT>", "<STDERR>") and ":/" not in n]
    assert [run["files"] for run in out["runs"]] == [len(data), len(data)] == [1, 1]


def test_a_run_of_another_tracer_is_shown_and_not_judged():
    """A Recorder trace after a Darshan log, and a Darshan log between two Recorder traces: the other tracer's run
    gets no faster/slower (its I/O time is the tracer's own way of timing), the baseline's tracer's runs do."""
    rec = LOGS / "recorder"
    data = iolens.compare(LOGS / "pairs/small_indep.darshan", rec / "small_records")
    assert [r["tracer"] for r in data["runs"]] == ["darshan", "recorder"]
    assert data["runs"][1]["verdict"]["verdict"] == "not judged" and data["runs"][1]["verdict"]["speedup"] is None
    assert "traced by recorder, the baseline by darshan" in data["runs"][1]["verdict"]["reason"]
    assert any(w.startswith("different tracers (") for w in data["warnings"])
    mixed = iolens.compare(rec / "seqwrite_mpiio", LOGS / "pairs/small_indep.darshan", rec / "small_records")
    assert [r["verdict"]["verdict"] == "not judged" for r in mixed["runs"]] == [False, True, False]
    text = iolens_cli("compare", rec / "seqwrite_mpiio", LOGS / "pairs/small_indep.darshan").stdout
    (line,) = [row for row in text.splitlines() if row.strip().startswith("verdict")]
    assert "not judged" in line and "faster" not in line and "slower" not in line
    assert "note: different tracers" in text


def test_rewrites_are_said_as_bytes_written_more_than_once():
    """pairs2 fill4_fill → fill4_nofill: rank 0's pre-fill writes the 192 MiB file once more; compare said
    "192 MiB written beyond the files' extent", which reads as writes past the end of the file."""
    fill = LOGS / "pairs2" / "fill4_fill.darshan"
    r = iolens.compare(fill, LOGS / "pairs2" / "fill4_nofill.darshan")
    line = next(i for i in r["insights"][1]["resolved"] if i["code"] == "REDUNDANT_WRITES")
    posix = darshan.DarshanReport(str(fill), read_all=True).records["POSIX"].to_df()["counters"]
    written = int(posix["POSIX_BYTES_WRITTEN"].sum())
    extent = int(posix["POSIX_MAX_BYTE_WRITTEN"].max()) + 1  # one shared file, written from offset 0
    assert line["before"] == written - extent == 192 << 20
    assert line["summary"].startswith("REDUNDANT_WRITES: 192 MiB written more than once → not flagged")
