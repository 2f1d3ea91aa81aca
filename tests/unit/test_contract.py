"""The Log contract on hand-built sources: a new trace source is an adapter of a few tables, and what the
analysis, the wording and the views read of ranks (labels, the noun, report rows, steps, every table by name)
comes from the contract's data, never from which kind of log it is."""
from __future__ import annotations

from functools import cached_property

import polars as pl
import pytest

from iolens import optional
from iolens.errors import MissingDependencyError
from iolens.analysis.diagnosis.context import Context, capital
from iolens.analysis.diagnosis.thresholds import Thresholds
from iolens.model import TABLES, LogBase, Provenance, TraceLog
from iolens.model.log import SEGMENT_SCHEMA, reader_arrays
from iolens.pipeline.judge import by_step


class TinySource(LogBase):
    """A made-up source of `nprocs` ranks, one read each: the least an adapter defines."""

    kind = "dftracer"

    def __init__(self, nprocs: int, processes: tuple = (), hosts=None):
        self.path, self.modules, self.notes = "tiny.trace", [], []
        self.nprocs, self.hosts, self._procs = nprocs, hosts or {}, processes

    @property
    def provenance(self) -> Provenance:
        return Provenance((self.path,), self._procs, 42 if self._procs else None)

    @cached_property
    def job(self) -> dict:
        return {"nprocs": self.nprocs, "run_time": 1.0}

    files = pl.DataFrame({"file_id": [7], "name": ["/data/x"], "mount": ["/"], "fs_type": ["ext4"]},
                         schema={"file_id": pl.UInt64, "name": pl.String, "mount": pl.String, "fs_type": pl.String})
    counters: dict = {}
    lustre = pl.DataFrame()
    heatmap = pl.DataFrame()
    has_dxt = True

    @cached_property
    def segments(self) -> pl.DataFrame:
        n = self.nprocs
        return pl.DataFrame({"module": ["DXT_POSIX"] * n, "file_id": [7] * n, "rank": list(range(n)),
                             "hostname": [self.hosts.get(r, "") for r in range(n)], "op": ["read"] * n,
                             "offset": [0] * n, "length": [4096] * n, "start": [0.1] * n, "end": [0.2] * n},
                            schema=SEGMENT_SCHEMA)

    @cached_property
    def dxt_records(self) -> pl.DataFrame:
        return self.segments.select("module", "file_id", "rank", pl.col("hostname").cast(pl.String),
                                    pl.lit(0).alias("write_count"), pl.lit(1).alias("read_count"))

    def file_names(self) -> dict:
        return {7: "/data/x"}

    def extra_tables(self) -> dict:
        return {"spans": self.segments.select("rank", "start", "end")}


def _process(rank, ranks, step, pid, role, step_rank):
    return {"rank": rank, "ranks": ranks, "step": step, "exe": "app", "pid": pid, "role": role, "log": f"{pid}.log",
            "recovered": False, "offset": 0.0, "step_rank": step_rank}


# a parent and two workers it forked (no MPI), then an MPI launch of two ranks logged as one process
PARENT_AND_WORKERS = (_process(0, 1, 0, 100, "parent", None), _process(1, 1, 0, 101, "worker", None),
                      _process(2, 1, 0, 102, "worker", None))
MPI_STEP = (_process(0, 2, 0, 200, "ranks 0–1", 0),)


def test_an_adapter_satisfies_the_contract_and_lists_every_table():
    log = TinySource(3, hosts={0: "n1", 2: "n2"})
    assert isinstance(log, TraceLog)
    names = list(log.tables())
    assert names[0] == "files" and names[-1] == "spans"
    assert {"dxt_records", "segments", "lustre", "heatmap", "processes"} <= set(names)
    assert set(TABLES) - {"counters"} <= set(names)
    assert reader_arrays(log) is None  # its tables are its own: the measures read them


def test_one_trace_names_ranks_by_number():
    log = TinySource(3, hosts={0: "n1", 2: "n2"})
    procs = log.processes
    assert procs["rank"].to_list() == [0, 1, 2]
    assert procs["label"].to_list() == ["rank 0", "rank 1", "rank 2"]
    assert procs["host"].to_list() == ["n1", None, "n2"]  # a rank with no host recorded: null
    assert procs["step"].to_list() == [0, 0, 0] and procs["pid"].null_count() == 3
    assert log.ranks_noun == "ranks" and log.labels([2, 0]) == ["rank 2", "rank 0"]
    assert [log.row_label(r) for r in range(3)] == ["0", "1", "2"]
    assert log.steps == [0] and log.step_log(0) is log
    with pytest.raises(KeyError):
        log.step_log(1)


@pytest.mark.parametrize("processes, labels, noun, rows", [
    (PARENT_AND_WORKERS, ["parent pid 100", "worker pid 101", "worker pid 102"], "processes", ["0·100", "0·101", "0·102"]),
    (MPI_STEP, ["rank 0", "rank 1"], "ranks", ["0·r0", "0·r1"]),
    ((_process(0, 1, 0, None, "process", None),), ["rank 0"], "processes", ["0·0"]),  # no pid: its rank
])
def test_assembled_processes_label_their_ranks(processes, labels, noun, rows):
    log = TinySource(sum(p["ranks"] for p in processes), processes)
    assert log.labels(range(len(labels))) == labels
    assert log.processes["label"].to_list() == labels
    assert log.ranks_noun == noun
    assert [log.row_label(r) for r in range(len(rows))] == rows


def words(log):
    """What a finding's text calls the log's ranks: its Context's helpers."""
    ctx = Context(log, Thresholds())
    return (capital(ctx.rank_label(1)), ctx.rank_labels([2, 1]), ctx.rank_list([1, 2, 0], limit=2),
            f"across {ctx.ranks_noun}")


@pytest.mark.parametrize("processes, said", [
    (PARENT_AND_WORKERS, ("Worker pid 101", "processes worker pid 101, worker pid 102",
                          "processes worker pid 101, worker pid 102 and 1 more", "across processes")),
    ((), ("Rank 1", "ranks 1, 2", "ranks 1, 2 and 1 more", "across ranks")),  # one trace: its numbers
])
def test_a_findings_text_names_the_processes_by_the_logs_labels(processes, said):
    assert words(TinySource(3, processes)) == said


def test_mpi_ranks_keep_their_numbers_and_short_forms():
    ctx = Context(TinySource(4, (_process(0, 4, 0, 200, "ranks 0–3", 0),)), Thresholds())
    assert ctx.rank_labels([0, 1, 2, 3]) == "ranks 0–3" and ctx.rank_label(3) == "rank 3"
    assert ctx.ranks_noun == "ranks"


def test_by_step_judges_one_trace_as_it_is():
    log = TinySource(2)
    found = [{"code": "X", "severity": "info", "evidence": {"ranks": [1], "files": []}}]
    assert by_step(log, lambda part: found if part is log else []) is found


def test_by_step_names_each_finding_of_an_assembled_log():
    log = TinySource(3, PARENT_AND_WORKERS)
    def judge(part):  # a finding names its rank through the Context of the step's log
        said = capital(Context(part, Thresholds()).rank_label(2))
        return [{"code": "X", "severity": "warning", "title": f"{said} is slow", "summary": "",
                 "evidence": {"ranks": [2], "files": ["/data/x"]}}]
    out = by_step(log, judge)
    (one,) = out
    assert one["title"] == "Worker pid 102 is slow" and one["step"] == 0 and one["rows"] == ["0·102"]
    assert [p["pid"] for p in one["processes"]] == [102]


def test_optional_dependencies_name_their_extra(monkeypatch):
    def missing(name):
        raise ModuleNotFoundError(f"No module named {name!r}", name=name.split(".")[0])

    monkeypatch.setattr(optional.importlib, "import_module", missing)
    for module, extra in (("dask", "fleet"), ("sklearn.cluster", "fleet"), ("optuna", "tune"), ("mcp", "mcp"),
                          ("duckdb", "sql")):
        with pytest.raises(MissingDependencyError, match=rf"pip install 'iolens\[{extra}\]'"):
            optional.require(module)
    with pytest.raises(ValueError):
        optional.require("numpy")  # not an optional dependency: imported at the top where used


def test_a_broken_install_is_not_a_missing_one(monkeypatch):
    def broken(name):
        raise ImportError("libfoo.so: cannot open shared object file", name="_foo_native")

    monkeypatch.setattr(optional.importlib, "import_module", broken)
    with pytest.raises(ImportError, match="libfoo"):
        optional.require("deltalake")
