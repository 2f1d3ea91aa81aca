"""Every command prints the same job measures for every log of the corpus (issue 19): the job's I/O time, the
slowest rank's I/O time per layer and the DXT coverage, as `info --json`, `compare --json`, `diagnose --json`
(its "measures") and a fleet row print them, identical to the last bit.

The fleet store and the comparison are each one run of the installed command over the whole corpus. `info`
and `diagnose` run once per log in-process through click's CliRunner: the same command code and JSON writer,
without a second of interpreter start-up for each of ~250 runs; `test_installed_command_prints_the_same`
checks on one log that the installed command prints the same text.
"""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from iolens.cli.main import cli as main
from iolens.fleet.features import LAYER_PREFIX
from iolens.model.darshan import LAYER_BY_NAME

from support.corpus import all_logs, log_id
from support.cli import run_iolens

LOGS = all_logs()


def cli_json(*args) -> dict:
    result = CliRunner().invoke(main, [*map(str, args)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.slow
@pytest.mark.parametrize("path", LOGS, ids=log_id)
def test_every_command_prints_the_same_job_measures(path, fleet_rows, compared):
    rows, unreadable = fleet_rows
    key = str(path.resolve())
    if key in unreadable:  # a log the reader refuses: refused alike by info (exit 2, one line)
        result = CliRunner().invoke(main, ["info", "--json", str(path)])
        assert result.exit_code == 2 and "Traceback" not in result.output
        return
    info = cli_json("info", "--json", path)
    diag = cli_json("diagnose", "--json", path)["measures"]
    run, row = compared[key], rows[key]
    m = info["measures"]
    assert m["io_time"] == run["io_time"] == diag["io_time"] == row["io_time"]
    for layer in info["layers"]:
        name, t = layer["layer"], layer["slowest_rank_io_time"]
        assert m["slowest_rank_io_time"][name] == diag["slowest_rank_io_time"][name] == t, name
        assert row[f"{LAYER_PREFIX[LAYER_BY_NAME[name].module]}_slowest_rank_time"] == t, name
        if name in run["layers"]:  # compare lists the layers that did I/O
            assert run["layers"][name]["slowest_rank_io_time"] == t, name
    assert m["dxt_coverage"] == run["dxt_coverage"] == diag["dxt_coverage"] == row["dxt_coverage"]
    assert m["dxt_truncated"] == run["dxt_truncated"] == diag["dxt_truncated"] == row["dxt_truncated"]
    assert m["dxt_segments"] == diag["dxt_segments"] == row["dxt_segments"]
    if row["has_dxt"] and m["dxt_coverage"] is not None:
        assert 0 < m["dxt_coverage"] <= 1


def test_installed_command_prints_the_same(generated):
    path = generated / "fill_rank0.darshan"
    for cmd in ("info", "diagnose"):
        assert json.loads(run_iolens(cmd, "--json", path).stdout) == cli_json(cmd, "--json", path)
