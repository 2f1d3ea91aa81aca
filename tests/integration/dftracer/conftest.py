"""Fixtures of the DFTracer tests."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from support.corpus import REPO

# --- DFTracer traces: the shared ones (../shared/logs/dftracer) and ones the tests make by tracing real Python
# programs under the real DFTracer (the `dftracer` package: its preload library for POSIX/STDIO calls, its Python
# API for spans) ---------------------------------------------------------------------------------------------
DFTRACER_WORKLOAD = REPO / "bench" / "dftracer_workload.py"


@pytest.fixture(scope="session")
def dftracer_logs(logs_dir) -> Path:
    path = logs_dir / "dftracer"
    if not path.is_dir():
        pytest.fail(f"no DFTracer traces at {path}")
    return path


def _preload() -> Path:
    spec = importlib.util.find_spec("dftracer")  # (found, not imported: the programs traced import it)
    if spec is None or spec.origin is None:
        msg = "the dftracer package is not installed (pip install dftracer; it is in the test extra)"
        if os.environ.get("CI"):
            pytest.fail(msg)  # CI installs the test extra: never pass by skipping
        pytest.skip(msg)
    lib = Path(spec.origin).parent / "lib64" / "libdftracer_preload.so"
    if not lib.exists():
        pytest.fail(f"the dftracer package has no preload library at {lib}")
    return lib


@pytest.fixture
def traced(tmp_path):
    """traced(script, *args, gzip=True, env=None) -> (trace folder, the program's stdout parsed as JSON): runs a
    Python program (a path, or the text of one) under DFTracer as its README says (preload library, Python API);
    `env`: DFTracer settings changed (a None value unsets one, e.g. LD_PRELOAD)."""
    preload = _preload()

    def run(script, *args, gzip=True, env=None):
        if not isinstance(script, Path):
            path = tmp_path / "program.py"
            path.write_text(script)
            script = path
        trace = tmp_path / "trace"
        trace.mkdir(exist_ok=True)
        settings = {**os.environ, "DFTRACER_ENABLE": "1", "DFTRACER_INC_METADATA": "1", "DFTRACER_INIT": "PRELOAD",
                    "DFTRACER_DATA_DIR": "all", "DFTRACER_LOG_FILE": str(trace / "trace"), "LD_PRELOAD": str(preload),
                    "DFTRACER_TRACE_COMPRESSION": "1" if gzip else "0"}
        for key, value in (env or {}).items():
            if value is None:
                settings.pop(key, None)
            else:
                settings[key] = value
        done = subprocess.run([sys.executable, str(script), *map(str, args)], env=settings, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return trace, json.loads(done.stdout.strip().splitlines()[-1])

    return run


@pytest.fixture
def workload(traced, tmp_path):
    """workload(*options, gzip=True) -> (trace folder, truth): bench/dftracer_workload.py traced, and what
    it counted itself (as the shared traces' truth.json)."""

    def run(*options, gzip=True):
        return traced(DFTRACER_WORKLOAD, tmp_path / "data", tmp_path / "ckpt", *options, gzip=gzip)

    return run


@pytest.fixture
def both_tracers(tmp_path):
    """both_tracers(shards, shard_kib, *options) -> (folder, truth): bench/dftracer_workload.py run once under
    Darshan's runtime (non-MPI mode, DXT on) and DFTracer together, both writing into one folder: one job, two
    tracers. DFTracer comes through its Python API (`DFTRACER_INIT=FUNCTION`: preloading its library beside
    Darshan's crashes the interpreter); the shards are made beforehand, so that both tracers see the same I/O
    (the program's own counts are the truth)."""
    from iolens.collect.run import RunError, find_darshan

    _preload()  # the dftracer package, or a skip
    try:
        lib = find_darshan()
    except RunError as exc:
        pytest.skip(f"no real Darshan runtime on this machine (IOLENS_DARSHAN_LIB): {exc}")

    def run(shards, shard_kib, *options):
        data, folder = tmp_path / "data", tmp_path / "both"
        data.mkdir(exist_ok=True)
        folder.mkdir(exist_ok=True)
        for i in range(shards):
            (data / f"shard_{i:04d}.rec").write_bytes(os.urandom(1024) * shard_kib)
        env = {**os.environ, "DFTRACER_ENABLE": "1", "DFTRACER_INC_METADATA": "1", "DFTRACER_INIT": "FUNCTION",
               "DFTRACER_DATA_DIR": "all", "DFTRACER_LOG_FILE": str(folder / "trace"),
               "DFTRACER_TRACE_COMPRESSION": "1", "LD_PRELOAD": str(lib), "DARSHAN_ENABLE_NONMPI": "1",
               "DXT_ENABLE_IO_TRACE": "1", "DARSHAN_LOG_DIR_PATH": str(folder), "DARSHAN_LOGPATH": str(folder)}
        args = [data, tmp_path / "ckpt", "--shards", shards, "--shard-kib", shard_kib, *options]
        done = subprocess.run([sys.executable, str(DFTRACER_WORKLOAD), *map(str, args)], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return folder, json.loads(done.stdout.strip().splitlines()[-1])

    return run
