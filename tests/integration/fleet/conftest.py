"""Fixtures of the fleet tests: threshold stores of the shared logs (built once per session for each setting,
whichever module asks first), the corpus-wide builds, and the page."""
from __future__ import annotations

import json
import shutil

import pytest

from iolens import fleet_report, read
from iolens.fleet import store as fleet_store
from iolens.fleet.build import build
from iolens.views.html import write_report

from support.browser import HOSTILE_NAME, rewrite_log
from support.corpus import all_logs
from support.fleet_stores import BAD_LOGS, build_per_job, build_store, run_cli


@pytest.fixture(scope="session")
def store_builder(tmp_path_factory, logs_dir):
    """(setting, cli, workers, logs) -> a store of those shared logs at that setting (support.fleet_stores.Stores),
    built the first time it is asked for: the default store of every shared log is one build for the session."""
    root = tmp_path_factory.mktemp("stores")
    built = {}

    def store(setting: dict, cli: bool, workers: int, logs: tuple):
        key = (logs, tuple(sorted((k, str(v)) for k, v in setting.items())), cli, workers if cli else 0)
        if key not in built:
            source = logs_dir
            if logs:  # the logs whose names hold one of `logs`, in a folder of their own
                source = root / f"logs{len(built)}"
                source.mkdir()
                for p in all_logs():
                    if any(k in p.name for k in logs):
                        (source / p.name).symlink_to(p)
                assert len(list(source.iterdir())) == len(logs)  # one log for each name
            built[key] = build_store(root / f"store{len(built)}", source, setting, cli, workers)
        return built[key]
    return store


class _Built(dict):
    """name -> store, each built when a test first asks for it (a run without the slow tests builds fewer)."""

    def __init__(self, make):
        super().__init__()
        self.make = make

    def __missing__(self, name):
        self[name] = self.make(name)
        return self[name]


@pytest.fixture(scope="module")
def stores(request, store_builder):
    """name -> the store the test module's STORES (support.fleet_stores.Stores) asks for under that name."""
    spec = request.module.STORES
    return _Built(lambda name: store_builder(spec.settings[name], name in spec.cli, spec.workers, spec.logs))


@pytest.fixture(scope="module")
def bad_logs(tmp_path_factory, logs_dir):
    """Logs a facility really has: empty, truncated, not a log at all."""
    d = tmp_path_factory.mktemp("bad")
    (d / "empty.darshan").write_bytes(b"")
    good = (logs_dir / "generated/collective_2phase.darshan").read_bytes()
    (d / "truncated.darshan").write_bytes(good[: len(good) // 3])
    (d / "notes.darshan").write_text("not a darshan log\n")
    return d


@pytest.fixture(scope="module")
def built(tmp_path_factory, logs_dir, bad_logs):
    """The shared logs plus the bad ones, through the CLI with the default (local process) scheduler."""
    store = tmp_path_factory.mktemp("fleet") / "store"
    r = run_cli("fleet", "build", logs_dir, bad_logs, "-o", store, "--files")
    assert r.returncode == 0, r.stderr
    return store, r


@pytest.fixture(scope="module")
def whole(tmp_path_factory, workflows):
    """One store over the whole workflows/ folder (every log carries the allocation's job id)."""
    store = tmp_path_factory.mktemp("fleetjobs") / "store"
    summary = json.loads(build_per_job(workflows, "-o", store, local=False).stdout)
    return store, summary


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, logs_dir):
    """A few hundred logs as a facility's tree holds them: symlinks to the small shared logs (each a
    distinct path, so a distinct job row), in day folders, plus two unreadable logs."""
    small = sorted(p for p in (logs_dir / "public/darshan-logs/release_logs").glob("*.darshan")
                   if p.stat().st_size < 200_000)
    small += sorted(p for p in (logs_dir / "public/pydarshan-examples").glob("*.darshan")
                    if p.stat().st_size < 200_000)
    assert len(small) >= 20
    root = tmp_path_factory.mktemp("corpus") / "logs"
    for k in range(200):
        day = root / f"2026/11/{k % 6 + 1}"
        day.mkdir(parents=True, exist_ok=True)
        src = small[k % len(small)]
        (day / f"job{k:04d}_{src.name}").symlink_to(src)
    (root / "2026/11/1" / BAD_LOGS[0]).write_bytes(b"")
    (root / "2026/11/2" / BAD_LOGS[1]).write_text("not a darshan log\n")
    return root


@pytest.fixture(scope="module")
def fleet_page(tmp_path_factory, logs_dir):
    """A store over the generated and release logs, a log with a hostile name and command line, and a log
    with its report page written next to it."""
    d = tmp_path_factory.mktemp("fleet")
    extra = d / "extra"
    extra.mkdir()
    rewrite_log(logs_dir / "generated/fill_rank0.darshan", extra / f"{HOSTILE_NAME}.darshan", exe=f"{HOSTILE_NAME} --run")
    shutil.copy(logs_dir / "generated/collective_2phase.darshan", extra / "with_report.darshan")
    shutil.copy(logs_dir / "public/pydarshan-examples/dxt.darshan", extra / "java_threads.darshan")
    write_report(read(extra / "with_report.darshan"), extra / "with_report.html", insights=[])
    store = d / "store"
    build([logs_dir / "generated", logs_dir / "public/darshan-logs/release_logs", extra], store, scheduler="sync")
    html = d / "fleet.html"
    fleet_report(store, html)
    return html, fleet_store.read(store, "jobs")
