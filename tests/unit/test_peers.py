"""Which processes RANK_IMBALANCE and STRAGGLER compare (`Context.peers`), on hand-built process lists and traces:
one program's ranks all together (every Darshan log, a job of one MPI launch: nothing changes), else the processes
of one role of a step (a DFTracer trace's workers among themselves, never its main process against them), a role
with too few processes not judged, and no claim that the others wait when they are not MPI ranks."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from iolens.analysis.diagnosis import Thresholds
from iolens.analysis.diagnosis.context import Context
from iolens.analysis.diagnosis.findings.rank_imbalance import imbalanced_angles, peer_features, title
from iolens.analysis.diagnosis.findings.straggler import report as straggler
from iolens.analysis.segments import Segments, groups
from iolens.analysis.units import fmt_ranks
from iolens.model.contract import Provenance

MiB = 1 << 20


def proc(rank, role, step=0, ranks=1, step_rank=None, recovered=False, pid=None):
    """One `Provenance.processes` entry."""
    return {"rank": rank, "ranks": ranks, "step": step, "exe": "python", "pid": pid or 100 + rank, "role": role,
            "log": f"p{rank}", "recovered": recovered, "offset": 0.0, "step_rank": step_rank}


def dftracer(workers=4, helper=True):
    """A DFTracer trace's processes: main (rank 0), `workers` workers, a helper (multiprocessing's tracker)."""
    return [proc(0, "main")] + [proc(r, "worker") for r in range(1, workers + 1)] + (
        [proc(workers + 1, "helper")] if helper else [])


MPI_JOB = [proc(0, "ranks 0–3", ranks=4, step_rank=0)]  # one Darshan log of a 4-rank launch
PIPELINE = [proc(r, f"rank {r}", step_rank=r) for r in range(4)] + [proc(4, "process", step=1),
                                                                      proc(5, "process", step=2)]


class _Ctx:
    """What the two findings read of a log, with the real peer grouping of `Context`."""

    peers = Context.peers
    peers_of = Context.peers_of
    peers_noun = Context.peers_noun

    def __init__(self, processes=(), run_time=100.0, seg=None):
        n = sum(p["ranks"] for p in processes) or 8
        self.nprocs = n
        self.log = SimpleNamespace(provenance=Provenance(("trace",), tuple(processes)))
        self.ranks_noun = "processes" if processes and all(p["step_rank"] is None for p in processes) else "ranks"
        self.th = Thresholds()
        self.run_time = run_time
        if seg is not None:
            rank, fid, start, end, length = (np.array(c) for c in zip(*seg))
            zeros = np.zeros(len(rank), dtype=np.uint8)
            self.trace_app = Segments(zeros, fid.astype(np.uint64), rank.astype(np.int64), zeros,
                                      np.zeros(len(rank), dtype=np.int64), length.astype(np.int64),
                                      start.astype(float), end.astype(float))

    def label_of(self, rank):
        p = next((p for p in self.log.provenance.processes if p["rank"] <= rank < p["rank"] + p["ranks"]), None)
        return f"rank {rank}" if p is None or p["step_rank"] is not None else f"{p['role']} pid {p['pid']}"

    def rank_labels(self, ranks):
        said = [self.label_of(int(r)) for r in sorted(ranks)]
        return fmt_ranks(sorted(ranks)) if all(s.startswith("rank ") for s in said) else ", ".join(said)

    rank_label = label_of

    def rank_groups(self, seg):
        return groups(seg.rank)

    def trace_truncated(self, module):
        return False

    def names_of(self, ids, limit=10):
        return [f"file{i}" for i in ids][:limit]

    def matters(self, seconds):
        return seconds >= 0.25

    def has(self, module):
        return False

    def has_layer(self, layer):
        return False


def groups_of(processes):
    got = _Ctx(processes).peers
    return None if got is None else [(g.role, g.ranks.tolist(), g.synchronised) for g in got]


@pytest.mark.parametrize("processes, expected", [
    ([], None),  # a Darshan log or a Recorder trace: its ranks
    (MPI_JOB, None),  # a job of one MPI launch: its ranks, as before
    (dftracer(), [("main", [0], False), ("worker", [1, 2, 3, 4], False), ("helper", [5], False)]),
    (PIPELINE, [(None, [0, 1, 2, 3], True), ("process", [4], False), ("process", [5], False)]),
    # a worker whose log is unfinished (its trace lost) is compared with no one
    ([proc(0, "parent"), proc(1, "worker", recovered=True), proc(2, "worker"), proc(3, "worker")],
     [("parent", [0], False), ("worker", [2, 3], False)]),
])
def test_peers(processes, expected):
    assert groups_of(processes) == expected


def test_peers_noun():
    assert _Ctx(dftracer()).peers_noun(2) == "worker processes"
    assert _Ctx(PIPELINE).peers_noun(1) == "ranks of step 0"
    assert _Ctx(MPI_JOB).peers_noun(1) == "ranks"


# --- RANK_IMBALANCE: the heaviest against the mean of its peers --------------------------------------------
def loads(n, **heavy):
    out = {"bytes": np.full(n, 8.0 * MiB), "operations": np.full(n, 8.0), "time": np.full(n, 1.0),
           "fsyncs": np.zeros(n), "end": None}
    for angle, (rank, value) in heavy.items():
        out[angle][rank] = value
    return out


def test_main_is_not_compared_with_its_workers():
    """main writes 48 MiB of checkpoints, each worker reads 8 MiB: as one program's ranks that is 4.4× the mean;
    as roles, main has no peer and the workers are even."""
    heavy_main = loads(6, bytes=(0, 48.0 * MiB))
    assert set(imbalanced_angles(_Ctx(), heavy_main)) == {"bytes"}  # all ranks peers: found (MPI, unchanged)
    assert imbalanced_angles(_Ctx(dftracer()), heavy_main) == {}


def test_a_heavy_worker_against_the_other_workers():
    """Worker rank 3 reads 48 MiB, the three others 8 MiB: 48 / 18 (the workers' mean, not all processes')."""
    ctx = _Ctx(dftracer())
    got = imbalanced_angles(ctx, loads(6, bytes=(3, 48.0 * MiB)))
    assert set(got) == {"bytes"} and got["bytes"][1] == 3 and got["bytes"][0] == pytest.approx(48 / 18)
    v = peer_features(ctx, loads(6, bytes=(3, 48.0 * MiB)))
    judged = {"headline": "spread", "kind": "bytes", "ratio": v["rank_imbalance_bytes_ratio"],
              **{k: v[f"rank_imbalance_bytes_{k}"] for k in ("top_ranks", "top_loads", "mean")}}
    assert title(judged, ctx.th, ctx) == ("I/O bytes uneven across worker processes: worker pid 103 carries up to "
                                          "2.7× the mean")


def test_a_role_of_one_process_is_not_judged():
    """The helper's I/O (rank 5) is a role of its own: nothing to compare it with."""
    assert imbalanced_angles(_Ctx(dftracer()), loads(6, bytes=(5, 480.0 * MiB))) == {}


def test_the_mpi_ranks_of_a_pipeline_among_themselves():
    """Rank 2 of the 4-rank launch writes 48 MiB; the later steps' processes (ranks 4, 5) write nothing and are
    not in the mean: 48 / 18, named among the ranks of step 0."""
    got = imbalanced_angles(_Ctx(PIPELINE), loads(6, bytes=(2, 48.0 * MiB)) | {"bytes": np.array(
        [8, 8, 48, 8, 0, 0], dtype=float) * MiB})
    assert got["bytes"][1] == 2 and got["bytes"][0] == pytest.approx(48 / 18)


# --- STRAGGLER: a late worker among the workers; main's late checkpoint is no straggler ---------------------
def ops(rank, start, end, step=1.0, fid=1):
    t, out = start, []
    while t < end:
        out.append((rank, fid, t, min(t + step * 0.9, end), 1 << 20))
        t += step
    return out


def test_main_writing_checkpoints_last_is_no_straggler():
    """Four workers read until 10 s; main writes its checkpoint from 10 to 30 s. As ranks of one program main
    would be a straggler the others wait for; as roles it has no peer."""
    seg = [op for r in range(1, 5) for op in ops(r, 0.0, 10.0)] + ops(0, 10.0, 30.0, fid=2)
    assert [i.evidence.ranks for i in straggler(_Ctx(seg=seg))] == [[0]]  # one program's ranks: found
    assert straggler(_Ctx(dftracer(), seg=seg)) == []


def test_a_late_worker_is_found_without_saying_the_others_wait():
    seg = [op for r in (1, 2, 4) for op in ops(r, 0.0, 10.0)] + ops(3, 0.0, 40.0) + ops(0, 0.0, 12.0, fid=2)
    got = straggler(_Ctx(dftracer(), seg=seg))
    assert [i.evidence.ranks for i in got] == [[3]]
    s = got[0]
    assert s.title.startswith("Worker pid 103 finishes I/O up to") and "after the other worker processes" in s.title
    assert s.evidence.metrics["peers"] == 4
    assert "idle_rank_time_s" not in s.evidence.metrics
    assert "wait" not in s.summary and "wait" not in s.recommendations[0].detail
    assert "Half of the 4 worker processes" in s.summary


def test_three_workers_are_too_few_for_a_straggler():
    seg = [op for r in (1, 2) for op in ops(r, 0.0, 10.0)] + ops(3, 0.0, 40.0)
    assert straggler(_Ctx(dftracer(workers=3), seg=seg)) == []
