"""Terminal rendering of `iolens jobs`: per job, its steps in start order, helpers and flows."""
from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from .terminal import fit_columns
from .units import human_bytes, human_count, human_seconds

STEP_COLUMNS = ("step", "program", "start", "time", "processes", "ranks", "reads", "writes", "read", "written", "logs")
# columns of the step table left out first when a terminal is too narrow for all of them: a number is never cut
STEP_COLUMNS_DROP_ORDER = ("logs", "ranks", "start", "reads", "writes", "processes")


def render_jobs(result: dict, console: Console) -> None:
    if not result["jobs"]:
        console.print("no logs")
    for job in result["jobs"]:
        title = f"job {job['job_id']}" if job["job_id"] is not None else "job (no batch job id: grouped by time)"
        start = min((s["start"] for s in job["steps"]), default=0.0)
        rows = [[str(i), s["exe"], f"+{human_seconds(s['start'] - start)}", human_seconds(s["end"] - s["start"]),
                 str(s["processes"]), str(s["ranks"] or "-"), human_count(s["reads"]), human_count(s["writes"]),
                 human_bytes(s["bytes_read"]), human_bytes(s["bytes_written"]), str(len(s["logs"]))]
                for i, s in enumerate(job["steps"])]
        keep = fit_columns(list(STEP_COLUMNS), rows, console.width, STEP_COLUMNS_DROP_ORDER)
        table = Table(title=title, title_justify="left", show_edge=False, padding=(0, 1))
        for k in keep:
            col = STEP_COLUMNS[k]  # the program's name folds when it alone is too long; numbers never wrap
            table.add_column(col, justify="left" if col == "program" else "right", no_wrap=col != "program",
                             overflow="fold" if col == "program" else "ellipsis")
        for row in rows:
            table.add_row(*(Text(row[k]) if STEP_COLUMNS[k] == "program" else row[k] for k in keep))
        dropped = [c for k, c in enumerate(STEP_COLUMNS) if k not in keep]
        if dropped:
            table.caption = f"not shown at this width: {', '.join(dropped)}"
        console.print(table)
        for i, s in enumerate(job["steps"]):
            notes = _log_notes(s)
            if notes:
                console.print(Text(f"step {i}: " + notes, style="yellow"))
            for line in _tracer_notes(s):
                console.print(Text(f"step {i}: " + line))
            for line in _spawn_notes(s):
                console.print(Text(f"step {i}: " + line))
        # helpers tied to a step (Python multiprocessing's) are named with it above
        tied = [t for s in job["steps"] for t in s.get("ties", []) if t["role"] == "helper" and t["tie"] == "spawn"]
        plain = job["helpers"] - len(tied)
        if plain:
            commands = [c for c in job["helper_commands"] if c not in {t["command"] for t in tied}]
            console.print(Text(f"helpers: {plain} processes that moved no data ("
                               + ", ".join(c.split(" ")[0] for c in commands) + ")", style="dim"))
        for line in flow_lines(job["flows"]):
            console.print(Text(line))
        for path in job["unplaced"]:
            console.print(Text(f"empty unfinished log, no step of its program: {Path(path).name}", style="yellow"))
    for bad in result.get("unreadable", []):
        console.print(Text(f"not read: {bad['path']}: {bad['error']}", style="yellow"))


FLOW_GROUP = 3  # this many files of one folder passing between the same two steps are said in one line


def flow_lines(flows: list) -> list:
    """One line per flow of data between steps; the files of one folder that pass between the same two steps (a
    data set's shards) in one line: `flow: 15 files in /data/ (shard0001.bin … shard0015.bin): step 0 → step 1`.
    The order is the flows' own, a group where its first file was."""
    groups: dict = {}
    for f in flows:
        groups.setdefault((f["file"].rpartition("/")[0], f["from"], f["to"]), []).append(f["file"])
    out = []
    for (folder, src, dst), paths in groups.items():
        if len(paths) < FLOW_GROUP:
            out += [f"flow: {path}: step {src} → step {dst}" for path in paths]
            continue
        names = sorted(path.rpartition("/")[2] for path in paths)
        out.append(f"flow: {len(paths)} files in {folder}/ ({names[0]} … {names[-1]}): step {src} → step {dst}")
    return out


def _log_notes(step: dict) -> str:
    parts = []
    if step["recovered"]:
        parts.append(f"{len(step['recovered'])} recovered from unfinished logs ("
                     + ", ".join(Path(p).name for p in step["recovered"]) + ")")
    if step["empty"]:
        parts.append(f"{len(step['empty'])} empty unfinished (named: " + ", ".join(Path(p).name for p in step["empty"])
                     + ")")
    for p in step.get("partial", []):
        parts.append(f"partial data in {Path(p['log']).name}: " + "; ".join(p["said"]))
    if step["missing_pids"]:
        parts.append("no log from pid " + ", ".join(map(str, step["missing_pids"])) + " (a worker that left none?)")
    return "; ".join(parts)


def _spawn_notes(step: dict) -> list:
    """The processes tied to a parent by inference (Python multiprocessing's spawned workers and helpers), per
    parent: the user sees what is inferred."""
    by_parent: dict = {}
    for t in step.get("ties", []):
        if t["tie"] == "spawn":
            by_parent.setdefault(t["parent_pid"], []).append(t)
    out = []
    for parent, tied in by_parent.items():
        workers = [str(t["pid"]) for t in tied if t["role"] == "worker"]
        helpers = [f"{t['pid']} ({_helper_module(t['command'])})" for t in tied if t["role"] == "helper"]
        said = ([("worker " if len(workers) == 1 else "workers ") + ", ".join(workers)] if workers else []) + (
            [("helper " if len(helpers) == 1 else "helpers ") + ", ".join(helpers)] if helpers else [])
        others = sorted({a for t in tied for a in t.get("alternatives", [])} - {parent})
        also = (f"; pid{'s' if len(others) > 1 else ''} {', '.join(map(str, others))} of the same interpreter "
                "were alive at their start too, the nearest start was chosen") if others else ""
        out.append(f"{' and '.join(said)} spawned by pid {parent} (Python multiprocessing): tied by command line "
                   f"and start time, an inference (Darshan records no parent for a spawned process){also}")
    return out


def _helper_module(command: str) -> str:
    """`multiprocessing.resource_tracker` out of `python -c from multiprocessing.resource_tracker import ...`."""
    words = command.split()
    return next((w for w in words if w.startswith("multiprocessing.")), words[0] if words else "?")


def _tracer_notes(step: dict) -> list:
    """A DFTracer trace's processes in the step, and those both tracers saw, lined up file by file."""
    out = []
    if step.get("tracers") == ["dftracer"]:
        out.append(f"a DFTracer trace ({len(step['traces'])} trace files)")
    lined = step.get("lined_up") or []
    if lined:
        files, agree = sum(p["files"] for p in lined), sum(p["agree"] for p in lined)
        out.append(f"traced by Darshan and DFTracer: {len(lined)} process(es) lined up by pid ("
                   + ", ".join(str(p["pid"]) for p in lined) + f"); bytes per file agree on {agree} of {files} "
                   "files both saw")
        for p in lined:
            for d in p["differ"][:5]:
                out.append(f"  pid {p['pid']}: {d['file']}: Darshan {human_bytes(d['darshan'][0])} read, "
                           f"{human_bytes(d['darshan'][1])} written; DFTracer {human_bytes(d['dftracer'][0])} read, "
                           f"{human_bytes(d['dftracer'][1])} written")
    return out
