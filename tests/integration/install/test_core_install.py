"""`pip install iolens` without extras: a light environment that runs the core commands on real logs, where
`fleet` and `tune` say in one line which extra to install (exit 2).

The fresh environment gets the wheel named by IOLENS_WHEEL (`.ci/run` builds it with scripts/build-dist), else
this checkout (pip builds the native extension with cargo). A quicker test beside it hides the fleet's packages
from the command in this environment.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("dask", "distributed", "deltalake", "scikit-learn", "scipy", "optuna", "sqlalchemy", "duckdb", "mcp")
# what the core may add to a fresh environment: polars and numpy are 258 MB of its 277 (BENCHMARKS.md), any heavy
# package of an extra (deltalake 134 MB, scipy 112 MB, ...) would pass it
CORE_LIMIT_MB = 300
LOG = "generated/collective_2phase.darshan"


def one_error_line(proc, extra: str) -> None:
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith("iolens: error: ") and f"'{extra}' extra" in lines[0]
    assert lines[0].endswith(f"pip install 'iolens[{extra}]'")


def run(venv, *args, cwd=None):
    """The venv's own `iolens` command (this checkout's sources are not on its path)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run([str(venv.bin / "iolens"), *map(str, args)], capture_output=True, text=True,
                          timeout=300, cwd=cwd, env=env)


@pytest.mark.slow
def test_the_core_is_light_and_holds_no_extra(core_venv):
    listed = json.loads(subprocess.run([core_venv.bin / "python", "-m", "pip", "list", "--format", "json"],
                                       capture_output=True, text=True, check=True).stdout)
    names = {p["name"].lower() for p in listed}
    assert "iolens" in names and not names & set(HEAVY), names & set(HEAVY)
    assert core_venv.added_mb < CORE_LIMIT_MB


@pytest.mark.slow
def test_the_core_commands_run_on_real_logs(core_venv, logs_dir, tmp_path):
    log = logs_dir / LOG
    r = run(core_venv, "info", log)
    assert r.returncode == 0 and "I/O per layer" in r.stdout, r.stderr
    r = run(core_venv, "diagnose", "--json", log)
    assert r.returncode == 0 and json.loads(r.stdout)["insights"], r.stderr
    r = run(core_venv, "report", log, "-o", tmp_path / "page.html")
    assert r.returncode == 0 and (tmp_path / "page.html").stat().st_size > 10_000, r.stderr
    r = run(core_venv, "compare", "--json", logs_dir / "pairs/small_indep.darshan", logs_dir / "pairs/small_coll.darshan")
    assert r.returncode == 0 and len(json.loads(r.stdout)["runs"]) == 2, r.stderr
    r = run(core_venv, "jobs", logs_dir / "workflows" / "loader")
    assert r.returncode == 0 and r.stdout.strip(), r.stderr
    r = run(core_venv, "files", "--json", log)
    assert r.returncode == 0, r.stderr
    r = run(core_venv, "export", log, "-o", tmp_path / "tables")
    assert r.returncode == 0 and list((tmp_path / "tables").glob("*.parquet")), r.stderr


@pytest.mark.slow
def test_fleet_and_tune_name_their_extra(core_venv, logs_dir, tmp_path):
    one_error_line(run(core_venv, "fleet", "build", logs_dir / "generated", "-o", tmp_path / "store"), "fleet")
    one_error_line(run(core_venv, "fleet", "report", tmp_path / "store", "-o", tmp_path / "f.html"), "fleet")
    one_error_line(run(core_venv, "tune", "--", "true"), "tune")
    assert not (tmp_path / "store").exists()  # said before any work


HIDE = textwrap.dedent("""
    import sys
    from importlib.abc import MetaPathFinder

    class Hide(MetaPathFinder):  # as if these packages were not installed
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in {hidden!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, Hide())
    from iolens.cli.main import main
    main(sys.argv[1:])
""")


@pytest.mark.smoke
@pytest.mark.parametrize("hidden, args, extra", [
    (("deltalake",), ["fleet", "build", "{logs}/generated", "-o", "{tmp}/store"], "fleet"),
    (("sklearn",), ["fleet", "report", "{tmp}/store", "-o", "{tmp}/f.html"], "fleet"),
    (("optuna",), ["tune", "--", "true"], "tune"),
])
def test_a_hidden_extra_is_one_line_before_any_work(logs_dir, tmp_path, hidden, args, extra):
    """The same line in this environment, with one package of the extra hidden from the import system."""
    code = HIDE.format(hidden=set(hidden))
    args = [a.format(logs=logs_dir, tmp=tmp_path) for a in args]
    r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    one_error_line(r, extra)
    assert not (tmp_path / "store").exists()
