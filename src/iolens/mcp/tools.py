"""The MCP tools' work, without the SDK: confined paths, bounded and traceable results.

Each tool function takes the server's `State` and its arguments and returns a JSON-ready dict; a bad call raises
`ToolFailure` (one line), which the server turns into an MCP error result. Every result says where its numbers
come from (`source`: the table and query, or the command and measure), and every list is cut at the caller's
`limit` rows and `max_bytes` bytes of JSON (never above the server's), saying so (`truncated`, `total`).
"""
from __future__ import annotations

import json
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

import polars as pl

from ..analysis.diagnosis import Thresholds
from ..analysis.diagnosis.insight import SCHEMA_VERSION
from ..analysis.files import file_table
from ..analysis.diagnosis.thresholds import parse_assignment
from ..collect.run import RunError
from ..collect.run import run as run_command
from ..errors import LogError
from ..fleet.store import data_files
from ..knobs import FIXED, KnobError, parse_setting
from ..knobs.registry import ROMIO_DOMAINS
from ..pipeline.judge import diagnose as judge
from ..pipeline.read import describe_jobs, summary
from ..pipeline.render import compare as compare_runs
from ..pipeline.sources import open_target
from ..reader.folders import walk
from ..tune import Events, Options, TuneError
from ..tune import tune as run_study
from ..views import tables as cat
from ..views.sql import Engine, json_rows, json_value

DEFAULT_ROWS = 100
MAX_ROWS = 5000
MAX_BYTES = 256_000
QUERY_SECONDS = 60  # a query's time limit: the server answers one call at a time


class ToolFailure(LogError):
    """A call the server refuses or cannot answer: one line for the agent."""


# --- where the server may read ---------------------------------------------------------------------------
class Roots:
    """The directories the server was started with; every path is resolved (symlinks followed) and must stay
    inside one of them, and so must everything inside a folder it reads."""

    def __init__(self, dirs):
        self.dirs = []
        for d in dirs:
            real = os.path.realpath(d)
            if not os.path.isdir(real):
                raise LogError("--root must be a directory", str(d))
            self.dirs.append(real)
        if not self.dirs:
            raise LogError("give at least one --root directory")

    def inside(self, real: str) -> bool:
        return any(real == d or real.startswith(d.rstrip(os.sep) + os.sep) for d in self.dirs)

    def resolve(self, path: str, must_exist: bool = True) -> str:
        """The real path of `path` (a relative one: under the first root that holds it), refused when it is
        outside the roots."""
        if not isinstance(path, str) or not path.strip():
            raise ToolFailure("empty path")
        if os.path.isabs(path):
            joined = path
        else:
            candidates = [os.path.join(d, path) for d in self.dirs]
            joined = next((c for c in candidates if os.path.lexists(c)), candidates[0])
        real = os.path.realpath(joined)
        if not self.inside(real):
            raise ToolFailure(f"{path}: outside the directories this server may read ({', '.join(self.dirs)})")
        if must_exist and not os.path.exists(real):
            raise ToolFailure(f"{path}: no such file or directory")
        if os.path.isdir(real):
            self._check_tree(path, real)
        return real

    def _check_tree(self, path: str, top: str) -> None:
        for root, dirs, files in walk(top):  # through symlinked folders, as the commands read them
            for name in dirs + files:
                if not self.inside(os.path.realpath(os.path.join(root, name))):
                    raise ToolFailure(f"{path}: holds {os.path.join(root, name)}, a link out of the directories "
                                      "this server may read")


# --- the server's state ----------------------------------------------------------------------------------
@dataclass
class State:
    roots: Roots
    allow_run: bool = False
    max_rows: int = MAX_ROWS
    max_bytes: int = MAX_BYTES
    query_seconds: float = QUERY_SECONDS
    cache_size: int = 4
    _sources: OrderedDict = field(default_factory=OrderedDict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def source(self, paths):
        """The opened target of these paths (resolved and confined), kept for the next calls (a few at most)."""
        if isinstance(paths, str):
            paths = [paths]
        if not paths:
            raise ToolFailure("give at least one path")
        real = tuple(self.roots.resolve(p) for p in paths)
        key = tuple((p, os.path.getmtime(p)) for p in real)
        if key in self._sources:
            self._sources.move_to_end(key)
            return self._sources[key]
        source = open_target(list(real))
        self._confine_store(source)
        self._sources[key] = source
        while len(self._sources) > self.cache_size:
            self._sources.popitem(last=False)
        return source

    def _confine_store(self, source) -> None:
        """A fleet store's Delta log names its data files: they must be inside the roots too."""
        if not source.store:
            return
        for table in source.names():
            for f in data_files(source.label, table):
                if not self.roots.inside(os.path.realpath(f)):
                    raise ToolFailure(f"{source.label}: its {table} table reads {f}, outside the directories this "
                                      "server may read")

    def rows(self, limit) -> int:
        return max(0, min(int(limit if limit is not None else DEFAULT_ROWS), self.max_rows))

    def bytes(self, max_bytes) -> int:
        return max(256, min(int(max_bytes if max_bytes is not None else self.max_bytes), self.max_bytes))


# --- bounds ------------------------------------------------------------------------------------------------
def size_of(payload) -> int:
    return len(json.dumps(payload, allow_nan=False, default=str))


def bounded(payload: dict, key: str, rows: int, max_bytes: int, total: int | None = None) -> dict:
    """`payload[key]` cut to `rows` items, then to as many as fit in `max_bytes` of JSON; `truncated`, `returned`
    and `total` say what was left out."""
    items = payload[key]
    total = len(items) if total is None else total
    payload[key] = items = items[:rows]
    payload.update(returned=len(items), total=total, truncated=len(items) < total)
    if size_of(payload) > max_bytes:
        payload.update(truncated=True,
                       note=f"cut at max_bytes={max_bytes}: ask for fewer columns or rows, or aggregate in SQL")
        lo, hi = 0, len(items)  # the most items that fit
        while lo < hi:
            mid = (lo + hi + 1) // 2
            payload[key] = items[:mid]
            payload["returned"] = mid
            if size_of(payload) <= max_bytes:
                lo = mid
            else:
                hi = mid - 1
        payload[key] = items[:lo]
        payload.update(returned=lo, truncated=lo < total)
    if size_of(payload) > max_bytes:
        raise ToolFailure(f"the answer is larger than max_bytes={max_bytes} even without rows")
    return payload


def _sql_text(value: str) -> str:
    return "'" + str(value).replace("'", "''") + "'"


# --- the read-only tools ----------------------------------------------------------------------------------
def info(state: State, path: str, max_bytes=None) -> dict:
    src = state.source(path)
    payload = {"log": src.label, "summary": _plain(summary(src.log())),
               "source": {"command": "iolens info --json", "measures": "docs/measures.md",
                          "tables": ["job", "modules", "ranks", "counters_<MODULE>"]}}
    if size_of(payload) > state.bytes(max_bytes):
        raise ToolFailure(f"the summary is larger than max_bytes={state.bytes(max_bytes)}; ask sql for its parts "
                          "(tables job, modules, ranks)")
    return payload


def files(state: State, path: str, sort: str = "bytes", limit=None, max_bytes=None) -> dict:
    src = state.source(path)
    table = file_table(src.log())
    if sort == "name":
        table = table.sort("name")
    elif sort != "bytes":
        if sort not in table.columns:
            raise ToolFailure(f"cannot sort by {sort!r} (columns: {', '.join(table.columns)})")
        table = table.sort(pl.col(sort).fill_null(-1), descending=True, maintain_order=True)
    rows = [{k: json_value(v) for k, v in r.items()} for r in table.head(state.rows(limit)).to_dicts()]
    payload = {"log": src.label, "files": rows,
               "source": {"command": "iolens files --json",
                          "how": "per file: counters summed over records at each layer; bytes_read/bytes_written/"
                                 "reads/writes from the lowest layer present (POSIX, STDIO, MPI-IO, ...); "
                                 "segments from dxt_records",
                          "tables": ["files", "counters_<MODULE>", "dxt_records", "lustre"]}}
    return bounded(payload, "files", state.rows(limit), state.bytes(max_bytes), total=table.height)


def diagnose(state: State, path: str, severities=None, thresholds=None, limit=None, max_bytes=None) -> dict:
    src = state.source(path)
    if thresholds:
        found = judge(src.log(), _thresholds(thresholds))
    else:
        found = src.insights()
    wanted = set(severities or ("critical", "warning", "info", "ok"))
    insights = [_traced(i, n, not thresholds) for n, i in enumerate(found) if i["severity"] in wanted]
    payload = {"log": src.label, "schema_version": SCHEMA_VERSION, "insights": insights,
               "source": {"command": "iolens diagnose --json" + "".join(f" -t {k}={v}" for k, v in
                                                                          (thresholds or {}).items()),
                          "codes": "docs/diagnosis.md",
                          "tables": ["insights", "insight_metrics"],
                          "note": "numbers_from names each insight's measures; evidence_sql re-asks the trace or "
                                  "counters behind it"}}
    return bounded(payload, "insights", state.rows(limit), state.bytes(max_bytes))


def _thresholds(values: dict):
    parsed = {}
    for k, v in values.items():
        try:
            name, value = parse_assignment(f"{k}={v}")
        except ValueError as exc:
            raise ToolFailure(f"threshold {k}: {exc}") from None
        parsed[name] = value
    return Thresholds(parsed)


def _traced(insight: dict, position: int, default_thresholds: bool = True) -> dict:
    """An insight with where its numbers come from, and a query over the evidence behind it."""
    code = insight["code"]
    out = dict(insight)
    out["insight"] = position
    out["numbers_from"] = (f"insight {code} (number {position} of iolens diagnose --json): each evidence metric is "
                           "its measure of that name; " +
                           (f"SQL: SELECT metric, value FROM insight_metrics WHERE insight = {position}"
                            if default_thresholds else
                            "with these thresholds (the insights tables hold the default thresholds' diagnosis)"))
    out["evidence_sql"] = _evidence_sql(insight)
    return out


def _evidence_sql(insight: dict) -> str:
    """A query over the tables that shows the operations or counters behind an insight's evidence."""
    ev = insight["evidence"]
    ranks = ", ".join(str(int(r)) for r in ev["ranks"][:64])
    names = ", ".join(_sql_text(f) for f in ev["files"][:32])
    if insight["source"] == "dxt":
        where = []
        if names:
            where.append(f"f.name IN ({names})")
        if ranks:
            where.append(f"s.rank IN ({ranks})")
        if ev.get("time_window"):
            t0, t1 = ev["time_window"]  # rounded to the microsecond: widened by one
            where.append(f's.start <= {round(t1 + 1e-6, 6)!r} AND s."end" >= {round(t0 - 1e-6, 6)!r}')
        return ("SELECT s.module, s.rank, s.op, count(*) AS ops, sum(s.length) AS bytes, min(s.length) AS smallest, "
                'max(s.length) AS largest, sum(s."end" - s.start) AS seconds FROM segments s JOIN files f USING '
                "(file_id)" + (" WHERE " + " AND ".join(where) if where else "") + " GROUP BY ALL ORDER BY ALL")
    where = f" WHERE rank IN ({ranks}, -1)" if ranks else ""
    return ("SELECT rank, layer, bytes_read, bytes_written, reads, writes, meta_ops, io_time FROM ranks" + where +
            " ORDER BY io_time DESC")


def sql(state: State, paths, query: str, limit=None, max_bytes=None) -> dict:
    src = state.source(paths)
    engine = Engine(src)
    try:
        result = engine.query(query, limit=state.rows(limit), seconds=state.query_seconds)
    finally:
        engine.close()
    frame = result.frame
    payload = {"columns": [{"name": c, "type": result.types.get(c, str(t))} for c, t in frame.schema.items()],
               "rows": json_rows(frame),
               "source": {"targets": [s.label for s in getattr(src, "sources", [src])], "tables": result.tables,
                          "query": query}}
    return bounded(payload, "rows", state.rows(limit), state.bytes(max_bytes),
                   total=result.total_rows if result.truncated else frame.height)


def schema(state: State, paths=None, table: str | None = None, max_bytes=None) -> dict:
    if paths:
        src = state.source(paths)
        engine = Engine(src)
        try:
            names = [table] if table else [n for n in src.names() if "-" not in n]
            missing = [n for n in names if n not in src.names()]
            if missing:
                raise ToolFailure(f"no table {missing[0]!r} here (tables: {', '.join(src.names())})")
            entries = [dict(cat.schema_entry(cat.describe(n, src.store) or cat.Table(n, "", "", ()),
                                             engine.describe(n)), table=n) for n in names]
        finally:
            engine.close()
    else:
        entries = cat.catalogue() + cat.catalogue(store=True)
        if table:
            entries = [e for e in entries if e["table"] == table]
            if not entries:
                raise ToolFailure(f"no table {table!r} (see schema without arguments)")
    payload = {"tables": entries, "source": {"catalogue": "iolens sql --schema (docs/sql.md)"}}
    return bounded(payload, "tables", len(entries), state.bytes(max_bytes))


def timeline(state: State, path: str, start=None, end=None, rank_from=None, rank_to=None, file=None, op=None,
             limit=None, max_bytes=None) -> dict:
    """The traced operations in a time and rank window, earliest first: a query over `segments` (returned)."""
    where = []
    if start is not None:
        where.append(f's."end" >= {float(start)!r}')
    if end is not None:
        where.append(f"s.start <= {float(end)!r}")
    if rank_from is not None:
        where.append(f"s.rank >= {int(rank_from)}")
    if rank_to is not None:
        where.append(f"s.rank <= {int(rank_to)}")
    if file:
        where.append(f"f.name LIKE {_sql_text('%' + file + '%')}")
    if op is not None:
        if op not in ("read", "write"):
            raise ToolFailure("op is read or write")
        where.append(f"s.op = {_sql_text(op)}")
    query = ('SELECT s.start, s."end", s.rank, s.module, s.op, f.name AS file, s."offset", s.length '
             "FROM segments s JOIN files f USING (file_id)" + (" WHERE " + " AND ".join(where) if where else "") +
             " ORDER BY s.start, s.rank")
    src = state.source(path)
    if "segments" not in src.names():
        raise ToolFailure(f"{src.label}: no DXT trace (Darshan records one with DXT_ENABLE_IO_TRACE=1)")
    out = sql(state, path, query, limit, max_bytes)
    out["window"] = {"start": start, "end": end, "rank_from": rank_from, "rank_to": rank_to, "file": file, "op": op}
    return out


def compare(state: State, paths, labels=None, baseline_runs: int = 1, max_bytes=None) -> dict:
    if not isinstance(paths, list) or len(paths) < 2:
        raise ToolFailure("compare needs at least two paths: the baseline first")
    sources = [state.source(p) for p in paths]
    result = _plain(compare_runs(*[s.log() for s in sources], labels=labels or None, baseline_runs=baseline_runs))
    payload = {"comparison": result,
               "source": {"command": "iolens compare --json " + " ".join(s.label for s in sources),
                          "measures": "docs/compare.md, docs/measures.md"}}
    if size_of(payload) > state.bytes(max_bytes):
        raise ToolFailure(f"the comparison is larger than max_bytes={state.bytes(max_bytes)}")
    return payload


def jobs(state: State, paths, limit=None, max_bytes=None) -> dict:
    if isinstance(paths, str):
        paths = [paths]
    real = [state.roots.resolve(p) for p in paths]
    described = _plain(describe_jobs(real))
    payload = {"jobs": described["jobs"], "unreadable": described["unreadable"],
               "source": {"command": "iolens jobs --json", "doc": "docs/jobs.md"}}
    return bounded(payload, "jobs", state.rows(limit), state.bytes(max_bytes))


def _plain(value):
    """JSON-ready: numpy scalars, tuples and sets as plain values; NaN and infinities as null."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        value = value.item()
    return json_value(value)


# --- the tools that execute commands (--allow-run) -------------------------------------------------------
def knobs(state: State) -> dict:
    rows = [{"name": k.name, "kind": k.kind, "sets": k.call, "help": k.help, "try": [str(v) for v in k.domain]}
            for k in FIXED.values()]
    rows += [{"name": f"romio.{h}", "kind": "text", "sets": "ROMIO_HINTS", "help": "a ROMIO hint",
              "try": [str(v) for v in values]} for h, values in ROMIO_DOMAINS.items()]
    rows.append({"name": "env.NAME", "kind": "text", "sets": "the environment", "help": "any variable", "try": []})
    return {"knobs": rows, "source": {"doc": "docs/knobs.md"}}


def run(state: State, command: list, output: str, settings=None, env=None, dxt: bool = True,
        timeout: float = 600.0, max_bytes=None) -> dict:
    """Run `command` under Darshan (as `iolens run`); its log goes to `output`, inside a root."""
    _check_run(state, command)
    target = state.roots.resolve(output, must_exist=False)
    try:
        chosen = dict(parse_setting(s) for s in (settings or []))
    except KnobError as exc:
        raise ToolFailure(f"knob: {exc}") from None
    out_path, err_path = target + ".stdout.txt", target + ".stderr.txt"
    try:
        with open(out_path, "wb") as out, open(err_path, "wb") as err:
            result = run_command(list(command), target, dxt=dxt, extra_env=dict(env or {}), knobs=chosen,
                                 timeout=timeout, stdout=out, stderr=err)
    except RunError as exc:
        raise ToolFailure(str(exc)) from None
    payload = {"log": None if result.log is None else str(result.log), "returncode": result.returncode,
               "timed_out": result.timed_out, "other_logs": [str(p) for p in result.others],
               "knobs": _plain(result.knobs), "stdout": out_path, "stderr": err_path,
               "stderr_tail": _tail(err_path),
               "source": {"command": "iolens run -o " + target + " -- " + " ".join(command)}}
    if size_of(payload) > state.bytes(max_bytes):
        payload["stderr_tail"] = ""
    return payload


def tune(state: State, command: list, output: str, budget: int = 12, repeats: int = 2, space: str | None = None,
         objective: str = "io", trial_timeout: float | None = None, max_bytes=None) -> dict:
    """Search the command's knobs (as `iolens tune`); the study folder `output` must be inside a root."""
    _check_run(state, command)
    folder = state.roots.resolve(output, must_exist=False)
    space_file = state.roots.resolve(space) if space else None
    try:
        result = run_study(list(command), Options(repeats=repeats, budget=budget, space=space_file,
                                                  objective=objective, output=folder, trial_timeout=trial_timeout),
                           Events())
    except TuneError as exc:
        raise ToolFailure(str(exc)) from None
    payload = {"study": _plain(result), "source": {"command": f"iolens tune --budget {budget} -o {folder} -- "
                                                            + " ".join(command)}}
    if size_of(payload) > state.bytes(max_bytes):
        payload = {"study_folder": folder, "note": "the result is larger than max_bytes: read the study folder",
                   "source": payload["source"]}
    return payload


def _check_run(state: State, command) -> None:
    if not state.allow_run:
        raise ToolFailure("this server was not started with --allow-run")
    if not command or not all(isinstance(c, str) for c in command):
        raise ToolFailure("command is a list of strings: the program and its arguments")


def _tail(path: str, limit: int = 2000) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""
