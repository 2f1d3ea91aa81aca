"""TRUNCATED_TRACE: the DXT trace (or a counter module) is incomplete; conclusions from it are partial.

The DXT trace holds fewer operations than the counters, or a module ran out of memory; or a process's trace is
missing because its log is unfinished (the process was ended while Darshan wrote it); or, for a source whose
partial modules lost events to damaged trace files (`log.partial_cause` "damage": a DFTracer trace cut or
corrupt), the trace and the counters computed from it lack what the damage took.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...layers import LAYER_BY_MODULE
from ...segments import per_group_at
from ...summary import unfinished_processes
from ..finding import Finding
from ..insight import Evidence, Insight, Recommendation
from ..savings import not_speed
from ..units import fmt_bytes, fmt_count, fmt_pct

CODE = "TRUNCATED_TRACE"
COUNTER_MODULES = ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR", "LUSTRE")


def report(ctx, _=None) -> list:
    out = []
    for module, d in ctx.dxt.items():
        if not d["truncated"]:
            continue
        out.append(_dxt_insight(ctx, module, d))
    said = set()
    for d in ctx.dxt.values():
        for u in d.get("unfinished", []):
            if u["log"] not in said:  # one finding per process, whichever DXT module lacks its operations
                said.add(u["log"])
                out.append(_unfinished_insight(ctx, u))
    for module in COUNTER_MODULES:
        if ctx.log.is_partial(module) and ctx.log.partial_cause == "damage":
            out.append(_damaged_counters_insight(ctx, module))
        elif ctx.log.is_partial(module):
            out.append(Insight(
                CODE, "warning", counters_title(module, "memory"),
                f"Darshan flagged the {module} module as partial: files opened after its record memory ran out "
                "are missing, so totals and per-file conclusions from these counters are lower bounds.",
                Evidence(metrics={"records": (ctx.log.module(module).records if ctx.log.module(module) else 0)}),
                [darshan_more_memory(module)], source="counters", partial=True, score=100.0, demotable=False))
    return out


def _dxt_insight(ctx, module, d) -> Insight:
    layer = "POSIX" if module == "DXT_POSIX" else "MPI-IO"
    parts, missing_kind, worst = [], [], 1.0
    metrics = {"traced_writes": d["writes"], "traced_reads": d["reads"]}
    for op, traced, counted in (("write", d["writes"], d["counter_writes"]), ("read", d["reads"], d["counter_reads"])):
        if counted is None:
            continue
        metrics[f"counted_{op}s"] = counted
        if counted > 0:
            cover = min(traced / counted, 1.0)
            metrics[f"{op}_coverage"] = cover
            worst = min(worst, cover)
            if traced < counted:
                parts.append(f"{fmt_count(traced)} of {fmt_count(counted)} {op}s ({fmt_pct(cover)})")
            if traced == 0:
                missing_kind.append(op)
    critical = bool(missing_kind) or worst < 0.5
    if parts:
        title = f"The {module} trace is truncated: it holds " + " and ".join(parts)
    else:
        title = trace_title(module)
    summary = ("; ".join(d["truncation_reasons"]) + ". Conclusions drawn from the trace (timing, ranks, offsets) "
               "are partial; totals come from the counters.")
    for op in missing_kind:
        if ctx.has(layer):
            spec = LAYER_BY_MODULE[layer]
            nbytes = ctx.total(layer, spec.bytes_read if op == "read" else spec.bytes_written)
            metrics[f"counted_{op}_bytes"] = nbytes
            summary += (f" The {layer} counters recorded {fmt_count(d['counter_' + op + 's'])} {op}s "
                        f"({fmt_bytes(nbytes)}) that the trace does not show: they happened, they were not traced.")
    window = None
    seg = ctx.trace_posix if module == "DXT_POSIX" else ctx.trace_mpiio  # (the DXT modules: `DXT_LAYERS`)
    if not seg.empty and ctx.run_time > 0:
        # from where the first rank stopped being traced to the end of the job (the ranks grouped once per
        # trace, as np.unique groups them)
        first, at = ctx.rank_groups(seg)
        ends = np.full(len(first), -np.inf)
        per_group_at(np.maximum, ends, at, seg.end)
        last = float(ends.min())
        if last < ctx.run_time:
            window = (last, float(ctx.run_time))
    counted_total = (d["counter_writes"] or 0) + (d["counter_reads"] or 0)
    return Insight(CODE, "critical" if critical else "warning", title, summary,
                   Evidence(ranks=[], files=[], time_window=window, metrics=metrics),
                   [whole_trace_files() if ctx.log.partial_cause == "damage" else
                    darshan_more_memory(module, counted_total)], source="dxt", partial=True,
                   score=100.0 + (1.0 - worst), demotable=False)


def _unfinished_insight(ctx, u: dict) -> Insight:
    """A process's trace lost with its unfinished log: said as such, with the fix that brings it back (letting
    the process end normally), not more Darshan memory."""
    name = Path(u["log"]).name
    who = f"pid {u['pid']}" if u["pid"] is not None else "a process"
    ops = " and ".join(f"{fmt_count(u[k])} {k}" for k in ("reads", "writes") if u[k])
    ranks = next((p["ranks"] for p in unfinished_processes(ctx.log) if p["log"] == u["log"]), [])
    return Insight(
        CODE, "warning", unfinished_title(u),
        f"{name} is an unfinished log: the process was ended while Darshan was writing it, so its DXT trace "
        f"({ops}) was never written. Its counters were recovered (flagged recovered) and are in every total; "
        "what is drawn from the trace (timing, offsets, per-rank time) leaves this process out. A full DXT "
        "buffer did not cause this: more Darshan memory would not bring it back.",
        Evidence(ranks=[r for r in ranks if r >= 0], metrics={"untraced_reads": u["reads"],
                                                             "untraced_writes": u["writes"]}),
        [Recommendation(
            "Let the processes end normally so that Darshan finishes their logs",
            "Darshan writes a process's log as the process exits. A process ended by a signal meanwhile (a "
            "multiprocessing pool's terminate(), which leaving a `with Pool()` block calls; workers killed at "
            "shutdown or at a time limit) leaves an unfinished `.darshan_partial`, or no log at all. Close the "
            "pool and join its workers before the program ends.",
            "pool.close()   # no more tasks\npool.join()    # wait until every worker has exited", "text")],
        source="counters", score=100.0, demotable=False)


def _damaged_counters_insight(ctx, module: str) -> Insight:
    """A counter module computed from a trace whose files were cut or damaged (`partial_cause` "damage"): the
    calls the damage took are not counted. No tracer memory is at fault: the fix is whole trace files."""
    info = ctx.log.module(module)
    return Insight(
        CODE, "warning", counters_title(module, "damage"),
        f"The {module} counters are computed from the trace's calls, and some trace file was cut or holds lines "
        "that are not events (the notes name them): the calls it lost are not counted, so totals and per-file "
        "conclusions from these counters are lower bounds.",
        Evidence(metrics={"records": info.records if info else 0}),
        [whole_trace_files()], source="counters", partial=True, score=100.0, demotable=False)


def counters_title(module: str, cause: str) -> str:
    """The title of a counter module flagged partial, by `partial_cause`."""
    why = "some trace files are damaged" if cause == "damage" else "Darshan ran out of records"
    return f"The {module} counters are incomplete: {why}"


def trace_title(module: str) -> str:
    """The title of a DXT module flagged partial, when its counts are not compared with the counters."""
    return f"The {module} trace is truncated (module flagged partial)"


def unfinished_title(u: dict) -> str:
    """The title of a process whose log is unfinished (`summary.unfinished_processes`' {pid, log})."""
    who = f"pid {u['pid']}" if u["pid"] is not None else "a process"
    return f"The trace of {who} is missing: its log is unfinished ({Path(u['log']).name})"


def partial_titles(modules, cause: str = "memory", unfinished=()) -> list:
    """What a log holds only in part, in the words of this finding's titles, from what the reader flagged
    without judging the trace (no counts compared): the modules flagged partial (`modules`: the log's module
    infos, `cause` its `partial_cause`) and the processes whose log is unfinished. For the commands that show
    tables rather than a diagnosis (`iolens sql`, `iolens jobs`): they say the data is partial the same way."""
    out = [unfinished_title(u) for u in unfinished]
    for m in modules:
        if not m.partial:
            continue
        if m.name.startswith("DXT"):
            out.append(trace_title(m.name))
        elif m.name in COUNTER_MODULES:
            out.append(counters_title(m.name, cause))
    return out


def whole_trace_files() -> Recommendation:
    return Recommendation(
        "Trace again and keep every trace file whole",
        "A trace file is cut when its process is killed before the tracer closes it, when the disk fills, or "
        "when the file is copied while it is still written; what follows the cut (or a corrupt gzip block) is "
        "lost. Let the processes end normally (finalize the tracer), and copy the trace after the job ends. "
        "More tracer memory would not bring the lost events back.")


def darshan_more_memory(module: str, counted: int | None = None) -> Recommendation:
    if module.startswith("DXT"):
        mib = 1024
        if counted:
            # a DXT segment costs 32 bytes (offset, length, start, end); keep a 2x margin
            mib = max(64, 1 << int(math.ceil(math.log2(max(1, counted * 32 * 2 / (1 << 20))))))
        return Recommendation(
            "Re-run with more Darshan memory so the trace is complete",
            "Darshan keeps the DXT trace in a fixed memory budget (DARSHAN_MODMEM, in MiB, 4 MiB by default "
            "since 3.4) and silently stops tracing when it is full. Raise it for the run you want to analyse; "
            "DXT_SMALL_IO_TRIGGER / DXT_UNALIGNED_IO_TRIGGER settings can also drop files from the trace.",
            f"export DARSHAN_MODMEM={mib}            # MiB for all instrumentation modules\n"
            f"export DARSHAN_MOD_ENABLE=DXT_POSIX,DXT_MPIIO\n"
            f"mpiexec -n $NPROCS ./app", "shell")
    return Recommendation(
        f"Re-run with room for more {module} records",
        "Darshan pre-allocates a fixed number of file records per module (1024 per process by default) and "
        "stops recording new files when they run out, so the counters miss files.",
        "cat > darshan.conf <<'EOF'\nMAX_RECORDS 16384 POSIX,MPI-IO,STDIO\nMODMEM 64\nEOF\n"
        "export DARSHAN_CONFIG_PATH=$PWD/darshan.conf", "shell")


FINDING = Finding(
    code=CODE,
    meaning="The DXT trace (or a counter module) is incomplete; conclusions from it are partial.",
    key_metrics=("read_coverage", "write_coverage", "records"),
    trigger="a DXT module holds fewer reads or writes than the counters of the same files, or is flagged partial "
            "(**critical** when a whole kind of operation is missing or less than half is traced); or a counter "
            "module is flagged partial (warning: files are missing). Window: from when the first rank stopped "
            "being traced to the end of the job. Or (warning) a process's log is unfinished (a "
            "`.darshan_partial`): its trace is missing, its counters recovered; metrics `untraced_reads`, "
            "`untraced_writes`, advice to let the processes end normally (docs/jobs.md). A log whose partial "
            "modules lost events to damaged trace files (`partial_cause` `damage`: a cut or corrupt DFTracer "
            "file) is said as such, with advice to keep the trace files whole, not to give the tracer more "
            "memory (docs/dftracer.md).",
    source="dxt / counters",
    report=report,
    saving=not_speed("not a speed fix: it makes the trace complete"),
)
