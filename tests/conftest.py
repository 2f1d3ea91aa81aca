"""Shared fixtures: where the real Darshan logs are (../shared/logs, or $IOLENS_LOGS)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
LOGS = Path(os.environ.get("IOLENS_LOGS", REPO.parent / "shared" / "logs")).resolve()
IOLENS = str(Path(sys.executable).parent / "iolens")  # the installed command, as a user runs it


def run_iolens(*args, check=True):
    """`iolens ARGS...` with its output piped; with `check`, it must succeed without a traceback."""
    proc = subprocess.run([IOLENS, *map(str, args)], capture_output=True, text=True, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
    return proc


def _require_logs():
    if not LOGS.is_dir():
        msg = f"Darshan logs not found at {LOGS} (set IOLENS_LOGS)"
        if os.environ.get("CI"):
            pytest.fail(msg)  # CI must never pass by skipping every real-log test
        pytest.skip(msg)


def all_logs() -> list:
    """Every real log in the corpus, as paths (sorted, stable ids)."""
    return sorted(LOGS.glob("**/*.darshan")) if LOGS.is_dir() else []


def log_id(path: Path) -> str:
    return str(path.relative_to(LOGS)) if LOGS in path.parents else path.name


@pytest.fixture(scope="session")
def logs_dir() -> Path:
    _require_logs()
    return LOGS


@pytest.fixture(scope="session")
def browser():
    """One Debian chromium, driven by Playwright, shared by every browser test of the session."""
    sync_api = pytest.importorskip("playwright.sync_api")
    from report_browser import CHROMIUM, launch

    if not os.path.exists(CHROMIUM):
        pytest.skip("Debian's chromium is not installed")
    with sync_api.sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture(scope="session")
def generated(logs_dir) -> Path:
    return logs_dir / "generated"


@pytest.fixture(scope="session")
def public(logs_dir) -> Path:
    return logs_dir / "public"


@pytest.fixture(scope="session")
def workflows(logs_dir) -> Path:
    """Real multi-log jobs (workflows/README.md), each log's POSIX totals in TRUTH.json."""
    return logs_dir / "workflows"


@pytest.fixture(scope="session")
def truth(workflows) -> dict:
    return json.loads((workflows / "TRUTH.json").read_text())


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
    """traced(script, *args, gzip=True) -> (trace folder, the program's stdout parsed as JSON): runs a Python
    program (a path, or the text of one) under DFTracer as its README says (preload library, Python API)."""
    preload = _preload()

    def run(script, *args, gzip=True):
        if not isinstance(script, Path):
            path = tmp_path / "program.py"
            path.write_text(script)
            script = path
        trace = tmp_path / "trace"
        trace.mkdir(exist_ok=True)
        env = {**os.environ, "DFTRACER_ENABLE": "1", "DFTRACER_INC_METADATA": "1", "DFTRACER_INIT": "PRELOAD",
               "DFTRACER_DATA_DIR": "all", "DFTRACER_LOG_FILE": str(trace / "trace"), "LD_PRELOAD": str(preload),
               "DFTRACER_TRACE_COMPRESSION": "1" if gzip else "0"}
        done = subprocess.run([sys.executable, str(script), *map(str, args)], env=env, cwd=tmp_path,
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


def pytest_collection_modifyitems(config, items):
    if not LOGS.is_dir() and os.environ.get("CI"):
        raise pytest.UsageError(f"Darshan logs not found at {LOGS}: CI needs them (set IOLENS_LOGS)")
