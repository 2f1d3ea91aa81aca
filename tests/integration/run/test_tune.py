"""`iolens tune`: the whole loop, end to end, without a Darshan runtime.

The command tuned is tests/support/tune_app.py, a stand-in application whose I/O time depends on its knobs (a
ROMIO hints file, an environment variable, a `{CHUNK}` placeholder) and which leaves a real Darshan-format
log of what it measured; the stand-in libdarshan.so of the `iolens run` tests (tests/support/darshan_stand_in.py) puts it
where Darshan would. Tune runs it exactly as `iolens run` does, through the installed `iolens` command.
"""
from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from support import SUPPORT
from support.cli import IOLENS

APP = SUPPORT / "tune_app.py"


def write_config(tmp_path, app_config, base: float, rules: list) -> Path:
    path = tmp_path / "app.json"
    path.write_text(json.dumps({**app_config, "base": base, "rules": rules}))
    return path


def write_space(tmp_path, text: str) -> Path:
    path = tmp_path / "space.toml"
    path.write_text(text)
    return path


SPACE = """
[romio]
cb_nodes = [1, 2, 4, 8]
[env]
TUNE_APP_MODE = ["plain", "fast"]
[arg]
CHUNK = {values = [4096, 65536, 1048576], default = 65536}
"""


def tune(tmp_path, stand_in, config, *args, study="study", timeout=600, extra=()):
    cmd = [IOLENS, "tune", "--json", "-o", str(tmp_path / study), *map(str, args), "--",
           sys.executable, str(APP), str(config), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=_env(stand_in))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _env(stand_in):
    return {**os.environ, "IOLENS_DARSHAN_LIB": str(stand_in)}


def trials(study: Path) -> pl.DataFrame:
    return pl.read_parquet(study / "trials.parquet")


def test_finds_the_knob_the_application_rewards(stand_in, app_config, tmp_path):
    # cb_nodes=4 makes the I/O 8x faster; the variable and the chunk size do not matter
    config = write_config(tmp_path, app_config, 0.4, [{"knob": "romio.cb_nodes", "value": 4, "factor": 0.125}])
    space = write_space(tmp_path, SPACE)
    proc = tune(tmp_path, stand_in, config, "--budget", 12, "--space", space, extra=["--chunk", "{CHUNK}"])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["verdict"]["verdict"] == "faster" and result["verdict"]["factor"] > 2
    assert result["best"]["config"]["romio.cb_nodes"] == 4
    assert result["runs"] == 12 and result["space"]["size"] == 24
    mattered = [k["knob"] for k in result["knobs_that_mattered"] if k["mattered"]]
    assert mattered == ["romio.cb_nodes"]
    # the confirmation ran what mattered (and what could not be measured apart from it): a knob measured
    # within the noise is left as the baseline had it
    assert result["best"]["config"]["romio.cb_nodes"] == 4
    baseline = {"romio.cb_nodes": None, "env.TUNE_APP_MODE": None, "arg.CHUNK": 65536}
    for k in result["knobs_that_mattered"]:
        assert k["knob"] in result["best"]["changed"] and (k["mattered"] or k["effect"] is None)
    assert set(result["best"]["changed"]) - {k["knob"] for k in result["knobs_that_mattered"]} == set()
    assert all(result["best"]["config"][n] == v for n, v in baseline.items() if n not in result["best"]["changed"])
    study = tmp_path / "study"
    assert (study / "best.hints").read_text() == "cb_nodes 4\n"
    assert "romio.cb_nodes = 4" in (study / "best.toml").read_text().splitlines()
    assert "ROMIO_HINTS=" in (study / "best.sh").read_text()
    t = trials(study)
    assert t.height == 12 and set(t["role"]) == {"baseline", "search", "confirm"}
    # every run's objective is the slowest rank's I/O time of its own log, which is what the app measured
    # (and printed), its log kept in the study folder with iolens run's record beside it
    for row in t.iter_rows(named=True):
        log = Path(row["log"])
        assert log.is_file() and Path(str(log) + ".run.json").is_file() and study in log.parents
        printed = float((log.parent / "stdout.txt").read_text().split()[1])
        assert row["objective"] == pytest.approx(printed, rel=1e-3)
        assert row["objective"] >= (0.05 if row["romio.cb_nodes"] == "4" else 0.4)
        assert json.loads(Path(str(log) + ".run.json").read_text())["hints"] == (
            f"cb_nodes {row['romio.cb_nodes']}" if row["romio.cb_nodes"] else "")
    # the model steered: some runs were chosen by it, with a prediction beside the measurement
    steered = t.filter(pl.col("chosen_by").str.starts_with("model"))
    assert steered.height >= 1 and steered["predicted"].is_not_null().all()
    assert json.loads((study / "model.json").read_text())["basis"][0] == "1"


@pytest.mark.slow
def test_says_no_real_change_when_no_knob_matters(stand_in, app_config, tmp_path):
    config = write_config(tmp_path, app_config, 0.15, [])
    space = write_space(tmp_path, SPACE)
    proc = tune(tmp_path, stand_in, config, "--budget", 8, "--space", space, extra=["--chunk", "{CHUNK}"])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["verdict"]["verdict"] == "no real change" and result["runs"] == 8
    assert not [k for k in result["knobs_that_mattered"] if k["mattered"]]
    # the terminal says it too
    plain = subprocess.run([IOLENS, "tune", "-o", str(tmp_path / "study"), "--budget", "8", "--space", str(space),
                            "--", sys.executable, str(APP), str(config), "--chunk", "{CHUNK}"],
                           capture_output=True, text=True, timeout=300, env=_env(stand_in))
    assert plain.returncode == 0, plain.stderr
    assert "verdict   no real change" in plain.stdout  # the finished study, resumed: nothing more to run
    assert trials(tmp_path / "study").height == 8


@pytest.mark.slow
def test_the_default_space_comes_from_the_baseline_log(stand_in, app_config, tmp_path):
    # no --space: the baseline's log (collective MPI-IO writes, 8 ranks) brings the collective-buffering hints
    config = write_config(tmp_path, app_config, 0.3, [{"knob": "romio.romio_cb_write", "value": "disable",
                                                       "factor": 0.1}])
    proc = tune(tmp_path, stand_in, config, "--budget", 12)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    names = [k["name"] for k in result["space"]["knobs"]]
    assert {"romio.romio_cb_write", "romio.cb_nodes", "romio.cb_buffer_size"} <= set(names)
    assert next(k for k in result["space"]["knobs"] if k["name"] == "romio.cb_nodes")["values"] == [1, 2, 4, 8]
    assert result["best"]["config"]["romio.romio_cb_write"] == "disable"
    assert result["verdict"]["verdict"] == "faster"


@pytest.mark.slow
def test_resumes_after_a_kill_with_no_run_lost_or_repeated(stand_in, app_config, tmp_path):
    config = write_config(tmp_path, app_config, 0.3, [{"knob": "romio.cb_nodes", "value": 2, "factor": 0.2}])
    space = write_space(tmp_path, SPACE)
    study = tmp_path / "study"
    cmd = [IOLENS, "tune", "--json", "-o", str(study), "--budget", "10", "--space", str(space), "--",
           sys.executable, str(APP), str(config), "--chunk", "{CHUNK}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=_env(stand_in))
    deadline = time.monotonic() + 240
    while len(list(study.glob("trials/*/trial.json"))) < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # a run that had ended (its exit recorded) counts as done; one under way is run again
    before = {p.parent / "run.darshan": (p.parent / "run.darshan").stat().st_mtime_ns
              for p in study.glob("trials/*/trial.json")}
    assert len(before) >= 4
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=_env(stand_in))
    assert again.returncode == 0, again.stderr
    t = trials(study)
    assert t.height == 10 and json.loads(again.stdout)["runs"] == 10
    # every run finished before the kill is in the study, not redone (its log untouched)
    logs = set(t["log"].to_list())
    for path, mtime in before.items():
        assert str(path) in logs and path.stat().st_mtime_ns == mtime
    # no configuration searched twice; baseline and confirmation exactly --repeats runs each
    search = t.filter(pl.col("role") == "search").select("romio.cb_nodes", "env.TUNE_APP_MODE", "arg.CHUNK")
    assert search.height == 6 and search.unique().height == 6
    assert t.filter(pl.col("role") == "baseline").height == 2 and t.filter(pl.col("role") == "confirm").height == 2


@pytest.mark.slow
def test_failed_runs_are_recorded_and_the_study_goes_on(stand_in, app_config, tmp_path):
    rules = [{"knob": "env.TUNE_APP_MODE", "value": "crash", "fail": "exit"},
             {"knob": "env.TUNE_APP_MODE", "value": "silent", "fail": "nolog"},
             {"knob": "env.TUNE_APP_MODE", "value": "stuck", "fail": "hang"},
             {"knob": "romio.cb_nodes", "value": 2, "factor": 0.2}]
    config = write_config(tmp_path, app_config, 0.2, rules)
    space = write_space(tmp_path, '[romio]\ncb_nodes = [1, 2]\n[env]\nTUNE_APP_MODE = ["ok", "crash", "silent", '
                                  '"stuck"]\n')
    proc = tune(tmp_path, stand_in, config, "--budget", 10, "--repeats", 1, "--trial-timeout", 3, "--space", space)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    t = trials(tmp_path / "study")
    failed = t.filter(pl.col("status") == "failed")
    reasons = dict(zip(failed["env.TUNE_APP_MODE"], failed["reason"]))
    assert set(reasons) == {"crash", "silent", "stuck"} and failed.height == 6  # each with both cb_nodes
    for mode, reason in reasons.items():
        assert {"crash": "exit status 3", "silent": "no log", "stuck": "timeout"}[mode] in reason
    assert failed["objective"].is_null().all()
    assert result["failed"] == 6 and result["runs"] == 10
    # the only mode that runs is "ok" (or not set, as in the baseline)
    best = result["best"]["config"]
    assert best["romio.cb_nodes"] == 2 and best["env.TUNE_APP_MODE"] in ("ok", None)
    assert result["verdict"]["verdict"] == "faster"


@pytest.mark.slow
def test_a_13440_configuration_space_is_planned_without_enumerating_runs(stand_in, app_config, tmp_path):  # noqa: E501
    # 14 alignments x 10 stripe counts x 8 stripe sizes x 12 cb_nodes, as in the issue
    space = write_space(tmp_path, """
[arg]
ALIGN = {min = "1KiB", max = "8MiB"}
[romio]
striping_factor = [1, 2, 4, 8, 16, 24, 32, 48, 64, 96]
striping_unit = {min = "64KiB", max = "8MiB"}
cb_nodes = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16]
""")
    config = write_config(tmp_path, app_config, 0.05, [])
    began = time.monotonic()
    proc = tune(tmp_path, stand_in, config, "--budget", 9, "--repeats", 1, "--space", space,
                extra=["--chunk", "{ALIGN}"])
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["space"]["size"] == 14 * 10 * 8 * 12 == 13440
    assert result["runs"] == 9 and len(list((tmp_path / "study").glob("trials/*"))) == 9  # runs, not configurations
    assert result["model"] is not None  # fitted and predicted over all 13,440 configurations
    assert time.monotonic() - began < 120


def test_the_model_predicts_a_large_grid_fast():
    from iolens.tune import model, space

    knobs = [space.Dimension("romio.cb_nodes", list(range(1, 101))),
             space.Dimension("romio.cb_buffer_size", [1 << k for k in range(16, 27)]),
             space.Dimension("romio.striping_factor", [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]),
             space.Dimension("romio.striping_unit", [1 << k for k in range(16, 27)]),
             space.Dimension("env.X", ["a", "b", "c"])]
    sp = space.Space(knobs)
    assert sp.size == 100 * 11 * 10 * 11 * 3  # 363,000: beyond the grid limit, predicted over a sample
    grid = sp.grid()
    basis = model.Basis.of(sp, bytes_moved=1 << 30)
    rng = np.random.default_rng(1)
    tried = grid[rng.choice(len(grid), 30, replace=False)]
    # a made-up truth: time falls with aggregators up to 16, then rises
    y = [1.0 + abs(math.log2(sp.config(t)["romio.cb_nodes"] / 16)) for t in tried]
    fitted = model.fit(basis, tried, y)
    idx, predicted, how = model.choose(fitted, basis, grid, [len(k.values) for k in knobs],
                                       {tuple(map(int, t)) for t in tried}, min(y))
    assert len(grid) == 100_000
    assert 8 <= sp.config(idx)["romio.cb_nodes"] <= 32


@pytest.mark.slow
def test_hdf5_and_netcdf_knobs_run_through_the_knob_layer(stand_in, app_config, tmp_path):
    # the knob layer (iolens.knobs) applies hdf5.* / netcdf.* to the unchanged program, so they are searched,
    # not listed as code changes; this stand-in loads no HDF5, and each run's .run.json says the knob was not applied
    config = write_config(tmp_path, app_config, 0.05, [])
    space = write_space(tmp_path, '[hdf5]\nalignment = [1048576, 4194304]\n[netcdf]\nfill = ["off"]\n')
    proc = tune(tmp_path, stand_in, config, "--space", space, "--budget", "6", "--repeats", "1")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert {k["name"] for k in result["space"]["knobs"]} == {"hdf5.alignment", "netcdf.fill"}
    assert result["space"]["code_changes"] == []
    sidecars = [json.loads(p.read_text()) for p in (tmp_path / "study").rglob("*.run.json")]
    tried = [k for side in sidecars for k in side.get("knobs", [])]
    assert tried and {k["name"] for k in tried} <= {"hdf5.alignment", "netcdf.fill"}
    assert all(not k["applied"] for k in tried)  # the stand-in does not load HDF5 or netCDF


@pytest.mark.smoke
def test_from_python_and_a_baseline_with_nothing_to_tune(stand_in, tmp_path, monkeypatch, logs_dir):
    # POSIX only, one file per process, no Lustre: the default space has no runtime knob, and says so
    import iolens

    monkeypatch.setenv("IOLENS_DARSHAN_LIB", str(stand_in))
    monkeypatch.setenv("IOLENS_TEST_LOG", str(logs_dir / "generated" / "file_per_process.darshan"))
    result = iolens.tune(["true"], output=str(tmp_path / "study"))
    assert result["runs"] == 2 and result["verdict"] is None and result["space"]["size"] == 0
    assert result["nothing_to_tune"].startswith("nothing in the space can be changed at run time; the baseline's "
                                                "I/O brings none of the default knobs")
    assert result["baseline"]["median"] == pytest.approx(
        iolens.compare(logs_dir / "generated" / "file_per_process.darshan",
                       logs_dir / "generated" / "file_per_process.darshan")["runs"][0]["io_time"])
    assert json.loads((tmp_path / "study" / "result.json").read_text())["runs"] == 2
    assert result["files"]["page"] == str(tmp_path / "study" / "tune.html") and Path(result["files"]["page"]).is_file()


@pytest.mark.parametrize("text, message", [
    ("[romio\ncb_nodes = 1", "not valid TOML"),
    ("[nosuch]\nx = [1]\n", "unknown knob namespace 'nosuch'"),
    ("[romio]\ncb_buffer_size = {min = \"4MiB\"}\n", "a range needs min and max"),
    ("[arg]\nOTHER = [1, 2]\n", "no {OTHER} placeholder"),
])
def test_a_bad_space_file_is_one_line_and_status_2(stand_in, app_config, tmp_path, text, message):
    config = write_config(tmp_path, app_config, 0.05, [])
    proc = tune(tmp_path, stand_in, config, "--space", write_space(tmp_path, text))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("iolens: error: ") and message in lines[0], proc.stderr


@pytest.mark.slow
@pytest.mark.browser
def test_the_study_page_opens_in_the_browser_without_errors(stand_in, app_config, tmp_path, browser):
    config = write_config(tmp_path, app_config, 0.2, [{"knob": "romio.cb_nodes", "value": 2, "factor": 0.2},
                                                      {"knob": "env.TUNE_APP_MODE", "value": "fast", "fail": "exit"}])
    space = write_space(tmp_path, '[romio]\ncb_nodes = [1, 2, 4]\n[env]\nTUNE_APP_MODE = ["<b>plain</b>", "fast"]\n')
    proc = tune(tmp_path, stand_in, config, "--budget", 8, "--space", space)
    assert proc.returncode == 0, proc.stderr
    page = browser.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: errors.append(f"fetched {r.url}") if not r.url.startswith("file:") else None)
    page.goto((tmp_path / "study" / "tune.html").resolve().as_uri())
    assert errors == []
    assert "faster" in page.inner_text("#verdict-table")
    assert page.locator("#order-chart circle.trial-dot").count() + page.locator("#order-chart path.failed").count() == 8
    assert page.locator("#knobs-card .panel").count() == 2
    assert page.locator("#trials tbody tr").count() == 8
    assert page.locator("#trials tbody tr.failed").count() >= 1
    assert "<b>plain</b>" in page.inner_text("#trials")  # a value from the user's space is text, never markup
    assert page.evaluate("document.querySelectorAll('#trials b').length") == 0
    page.close()


def test_no_darshan_runtime_is_one_line_before_anything_runs(tmp_path):
    proc = subprocess.run([IOLENS, "tune", "-o", str(tmp_path / "study"), "--", "true"], capture_output=True,
                          text=True, timeout=120,
                          env={**os.environ, "IOLENS_DARSHAN_LIB": str(tmp_path / "missing" / "libdarshan.so")})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        f"iolens: error: IOLENS_DARSHAN_LIB: no Darshan runtime library at {tmp_path / 'missing' / 'libdarshan.so'}"]
    assert not (tmp_path / "study").exists()


@pytest.mark.slow
def test_objective_wall_judges_the_wall_times(stand_in, app_config, tmp_path):
    config = write_config(tmp_path, app_config, 1.5, [{"knob": "romio.cb_nodes", "value": 2, "factor": 0.05}])
    space = write_space(tmp_path, "[romio]\ncb_nodes = [1, 2, 4]\n")
    proc = tune(tmp_path, stand_in, config, "--objective", "wall", "--budget", 7, "--space", space)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["objective"] == "wall" and result["rule"]["measure"] == "wall"
    assert result["verdict"]["verdict"] == "faster" and result["verdict"]["reason"].startswith("wall time")
    t = trials(tmp_path / "study").filter(pl.col("status") == "ok")
    assert (t["objective"] == t["wall"]).all() and (t["wall"] > t["io_time"]).all()
    assert result["best"]["config"]["romio.cb_nodes"] == 2
