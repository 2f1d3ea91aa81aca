"""What every finding needs, computed once per log: counters per file, the trace per layer, job facts."""
from __future__ import annotations

from functools import cached_property

import numpy as np
import polars as pl

from ...model.log import MODULE, OP, reader_arrays
from ...model.darshan import COUNTER_PREFIX, STD_STREAMS
from .. import measures
from ..measures import RecordCounters, recorded
from ...reader.lustre import COMPONENT_FIELDS
from ..segments import MODULE_CODES, Segments, log_segments
from ..segments import distinct, group_sums, groups, in_sorted, is_in
from ..summary import dxt_summary
from ..access import classify_segments, random_groups, transitions
from ..loop import loop_of
from ..units import fmt_ranks
from .common import RUN_TIME, matters
from .insight import NEEDS
from .stages import evaluate

HDF5_SUFFIXES = (".h5", ".hdf5", ".he5", ".hdf", ".h5part", ".nc4", ".cgns")
NETCDF_SUFFIXES = (".nc", ".cdf", ".netcdf")
MAX_RANKS = 32  # evidence lists at most this many ranks (the heaviest first)
MATTERS_DTYPES = {RUN_TIME: pl.Float64, "stake": pl.Float64}
MAX_FILES = 10

clip = recorded  # the findings' short name for a counter read with -1 as 0


class RankWords:
    """How a finding's text names processes: 'rank 3', 'ranks 0–7', 'ranks' by default (MPI ranks by number: the
    fleet's titles, which have no log at hand). A `Context` names them as its log labels them (`Log.label`,
    `Log.ranks_noun`): a job's non-MPI processes are 'worker pid 3688', a list of them 'processes A, B'."""
    ranks_noun = "ranks"

    def label_of(self, rank: int) -> str:
        """One rank as the log names it."""
        return f"rank {rank}"

    def rank_label(self, rank) -> str:
        """'rank 3', or the log's own label ('worker pid 3688'); `capital` it at the start of a sentence."""
        return self.label_of(int(rank))

    def peers_noun(self, rank) -> str:
        """What `rank` is compared with: `ranks_noun` when every rank is a peer of every other (one program's
        ranks), else its peers' kind ('worker processes', 'ranks of step 1': a `Context` with `peers`)."""
        return self.ranks_noun

    def rank_labels(self, ranks) -> str:
        """'rank 0', 'ranks 0, 1', 'ranks 0–7', 'ranks 0, 3, 9, … (20 ranks)' (`units.fmt_ranks`); ranks the log
        labels otherwise: 'worker pid 3688', 'processes worker pid 3688, worker pid 3689'."""
        ranks = sorted(int(r) for r in ranks)
        said = self._said(ranks)
        if said is None:
            return fmt_ranks(ranks)
        if len(said) == 1:
            return said[0]
        shown = ", ".join(said[:FMT_RANKS_LIMIT])
        more = f", … ({len(said)} processes)" if len(said) > FMT_RANKS_LIMIT else ""
        return f"processes {shown}{more}"

    def rank_list(self, ranks, limit: int = 8) -> str:
        """'ranks 0, 3, 9' with at most `limit` named: 'ranks 0, …, 7 and 5 more' (or 'processes A, B', as the
        log labels them)."""
        ranks = [int(r) for r in ranks]
        said = self._said(ranks[:limit])
        noun, shown = (("ranks", ", ".join(str(r) for r in ranks[:limit])) if said is None else
                       ("processes", ", ".join(said)))
        return f"{noun} {shown}" + (f" and {len(ranks) - limit} more" if len(ranks) > limit else "")

    def _said(self, ranks) -> list | None:
        """The labels of `ranks`, or None when each is its plain number ('rank 3'): the text then keeps the
        numbers' short forms ('ranks 0–7')."""
        said = [self.label_of(r) for r in ranks]
        return None if all(s == f"rank {r}" for s, r in zip(said, ranks)) else said


FMT_RANKS_LIMIT = 8  # `units.fmt_ranks`' default: the ranks a list names before it counts the rest
RANK_WORDS = RankWords()


def capital(text: str) -> str:
    """`text` starting a sentence."""
    return text[:1].upper() + text[1:]


def _file_names(log) -> dict:
    """file id -> name of the log's files (`log.files`), without building that table for a Darshan file's log."""
    raw = reader_arrays(log)
    if raw is None:
        files = log.files
        return dict(zip(files["file_id"].to_list(), files["name"].to_list()))
    return without_heatmaps(raw.names)


def without_heatmaps(names: dict) -> dict:
    """`names` (record id -> name) less the heatmaps' pseudo-records ('heatmap:POSIX', ...), ids as ints: a
    copy of the dict and a search of the names joined, not a test of each name in Python (0.4 ms on a log of
    two thousand files). A name holding a newline, or ids not ints (the reader's are), take the plain way."""
    values = list(names.values())
    joined = "\n".join(values)
    if not values or type(next(iter(names))) is not int or joined.count("\n") != len(values) - 1:
        return {int(rec_id): name for rec_id, name in names.items() if not name.startswith("heatmap:")}
    out = dict(names)
    keys = list(names)
    at = joined.find("heatmap:")
    while at >= 0:
        i = joined.count("\n", 0, at)  # the name it is in
        if values[i].startswith("heatmap:"):
            out.pop(keys[i], None)
        at = joined.find("heatmap:", at + 1)
    return out


class Peers:
    """Processes compared with each other: `role` (None: ranks of one MPI launch), their `ranks` (ascending),
    whether they are `synchronised` (MPI ranks: the others wait for a late one), their `step`."""

    __slots__ = ("role", "ranks", "synchronised", "step")

    def __init__(self, role, ranks: np.ndarray, synchronised: bool, step: int = 0):
        self.role, self.ranks, self.synchronised, self.step = role, ranks, synchronised, step

    def noun(self, steps: bool = False) -> str:
        """'worker processes', 'ranks' ('ranks of step 1' when the job has several `steps`)."""
        base = "ranks" if self.role is None else f"{self.role} processes"
        return f"{base} of step {self.step}" if steps and self.role is None else base

    def __len__(self) -> int:
        return len(self.ranks)


class Context(RankWords):
    """What every finding reads of one log, computed once: its counters as numpy columns, its trace, job facts,
    the thresholds (`th`) and how the text names its processes (`RankWords`)."""

    def __init__(self, log, thresholds):
        self.log = log
        self.th = thresholds
        job = log.job
        self.job = job
        self.nprocs = max(int(job.get("nprocs") or 1), 1)
        self.run_time = max(float(job.get("run_time") or 0.0), 0.0)
        self.names = _file_names(log)
        self.records = measures.log_counters(log)  # numpy over the reader's arrays: no table built for them
        self.dxt = {d["module"]: d for d in dxt_summary(log, self.records)}

    # --- how the text names ranks: as the log labels them (the contract's `label`, `ranks_noun`) ----------
    def label_of(self, rank: int) -> str:
        return self.log.label(rank)

    @property
    def ranks_noun(self) -> str:
        return self.log.ranks_noun

    # --- which ranks are peers: compared with each other (RANK_IMBALANCE, STRAGGLER) ----------------------
    @cached_property
    def peers(self) -> list | None:
        """The log's processes grouped into peers, or None when all its ranks are peers (a Darshan log, a
        Recorder trace, a job of one MPI launch: one program's ranks, which wait for each other).

        The ranks of one MPI launch are peers; any other process is a peer of the processes of its step with
        its role (a loader's workers among themselves; a DFTracer trace's main, worker and helper processes
        are three groups): a training loop's main process is not a worker that reads slowly, and workers are
        not synchronised with main at the end of their I/O. A process whose log is unfinished (its trace lost)
        is left out of its role's peers. `Peers` in rank order of their first rank."""
        procs = self.log.provenance.processes
        if not procs:
            return None
        by_key = {}
        for p in procs:
            mpi = p["step_rank"] is not None
            key = (p["step"], None if mpi else (p["role"] or "process"))
            if p.get("recovered") and not mpi:
                by_key.setdefault(key, [])  # its trace lost with its unfinished log (TRUNCATED_TRACE): not
                continue  # compared as if it had done no I/O
            ranks = [r for r in range(p["rank"], p["rank"] + p["ranks"]) if r < self.nprocs]
            by_key.setdefault(key, []).extend(ranks)
        groups = [Peers(role, np.array(sorted(ranks), dtype=np.int64), role is None, step)
                  for (step, role), ranks in by_key.items() if ranks]
        if len(groups) == 1 and groups[0].synchronised:
            return None
        return sorted(groups, key=lambda g: int(g.ranks[0]))

    def peers_of(self, rank):
        """The `Peers` holding `rank`, or None when all ranks are peers."""
        if self.peers is None:
            return None
        return next((g for g in self.peers if int(rank) in set(g.ranks.tolist())), None)

    def peers_noun(self, rank) -> str:
        g = self.peers_of(rank)
        return self.ranks_noun if g is None else g.noun(len({p.step for p in self.peers}) > 1)

    # --- names and kinds ---------------------------------------------------------------------
    def name(self, file_id) -> str:
        return self.names.get(int(file_id), f"<record {int(file_id):016x}>")

    def names_of(self, file_ids, limit: int = MAX_FILES) -> list:
        return [self.name(f) for f in list(file_ids)[:limit]]

    @cached_property
    def std_ids(self) -> set:
        return {fid for fid, name in self.names.items() if name in STD_STREAMS}

    def is_data(self, file_id) -> bool:
        return int(file_id) not in self.std_ids

    def file_kind(self, file_id) -> str:
        """'hdf5', 'pnetcdf', 'netcdf', 'mpiio' or 'posix': which library to phrase recommendations for."""
        kinds = self.__dict__.setdefault("_kinds", {})
        fid = int(file_id)
        if fid not in kinds:
            kinds[fid] = self._file_kind(fid)
        return kinds[fid]

    def _file_kind(self, fid: int) -> str:
        name = self.name(fid).lower()
        if fid in self.ids_in("H5F") or fid in self.ids_in("H5D", "file_rec_id") or name.endswith(HDF5_SUFFIXES):
            return "hdf5"
        if fid in self.ids_in("PNETCDF_FILE") or fid in self.ids_in("PNETCDF_VAR", "file_rec_id"):
            return "pnetcdf"
        if name.endswith(NETCDF_SUFFIXES):
            return "netcdf"
        if fid in self.ids_in("MPI-IO"):
            return "mpiio"
        return "posix"

    def kinds(self, file_ids) -> set:
        return {self.file_kind(f) for f in file_ids}

    def ids_in(self, module: str, column: str = "file_id") -> set:
        cache = self.__dict__.setdefault("_ids_cache", {})
        key = (module, column)
        if key not in cache:
            c = self.records.get(module)
            cache[key] = set(c.raw(column).tolist()) if c is not None and c.has_column(column) else set()
        return cache[key]

    def memo(self, key, compute):
        """`compute()`, once per log for `key`: a table that several findings of a family share."""
        cache = self.__dict__.setdefault("_memo", {})
        if key not in cache:
            cache[key] = compute()
        return cache[key]

    @cached_property
    def loop(self):
        """The traced training loop (`analysis.loop.Loop`: a DFTracer trace's spans), or None."""
        return loop_of(self.log)

    # --- counters ------------------------------------------------------------------------------
    def counters(self, module: str):
        df = self.log.counters.get(module)
        return df if df is not None and df.height else None

    # numpy views of the counters, for the findings' integer totals and per-row arithmetic: on a log of a few
    # dozen records a polars query costs ~100 µs of fixed overhead, a numpy operation ~1 µs. Only what numpy
    # computes bit for bit like polars goes through them: integer sums, element-wise arithmetic, and float
    # sums handed back to polars as a Series (`float_sum`); per-group float sums stay polars group-bys.
    def column(self, module: str, name: str) -> np.ndarray:
        """Counter `name` of `module`, one value per record, -1 ('not recorded') read as 0 (`clip`)."""
        cache = self.__dict__.setdefault("_columns", {})
        key = (module, name)
        values = cache.get(key)
        if values is None:
            values = cache[key] = self._column(module, name)
        return values

    def _column(self, module: str, name: str) -> np.ndarray:
        c = self.records[module]
        if name in ("file_id", "rank"):
            return c.raw(name)
        if isinstance(c, RecordCounters) and c.has(name):  # the reader's arrays: a row of the clipped matrix
            return c.col(name)
        return np.maximum(c.raw(name), 0)

    def counter_rows(self, module: str, names) -> np.ndarray:
        """Integer counters `names` of `module` (clipped at 0) as rows, one per name, records along them: a
        slice of the module's clipped matrix when they are consecutive there (the size bins), no copy."""
        cache = self.__dict__.setdefault("_counter_rows_cache", {})
        key = (module, tuple(names))
        rows = cache.get(key)
        if rows is None:
            rows = cache[key] = self._counter_rows(module, key[1])
        return rows

    def _counter_rows(self, module: str, names: tuple) -> np.ndarray:
        c = self.records[module]
        if isinstance(c, RecordCounters) and all(n in c.ints for n in names):
            return c.rows(names)
        return np.stack([self.column(module, n) for n in names]) if names else np.zeros((0, len(c.ranks)), np.int64)

    def total(self, module: str, *names: str) -> int:
        """The integer sum over records of counters `names` (clipped at 0); 0 when the module is absent."""
        if not self.has(module):
            return 0
        sums = self._int_totals(module)
        c = self.records[module]
        if sums is not None and all(n in c.ints for n in names):  # integers: exact in any order
            return int(sum(int(sums[c.ints[n]]) for n in names))
        return int(sum(int(self.column(module, n).sum()) for n in names if self.records[module].has(n)))

    def _int_totals(self, module: str):
        """Every integer counter of `module` summed over its records, at once, from its clipped matrix (a module
        of a few records); None for a table's counters or a module of many records (summing every counter of
        thousands costs more than the few a finding reads)."""
        cache = self.__dict__.setdefault("_int_totals_cache", {})
        if module not in cache:
            c = self.records[module]
            matrix = c.clipped() if isinstance(c, RecordCounters) else None
            cache[module] = matrix[0].sum(axis=1) if matrix else None
        return cache[module]

    def file_groups(self, module: str) -> tuple:
        """(file ids, sorted; index of each record's file in them): the per-file sums' grouping."""
        cache = self.__dict__.setdefault("_file_groups", {})
        if module not in cache:
            cache[module] = self._file_grouping(module)[:2]
        return cache[module]

    def _file_grouping(self, module: str) -> tuple:
        """`file_groups` (np.unique's, from one stable sort), and the records by file (`order`) with each
        file's first place in that order (`starts`): the grouping of the per-file reductions (`reduceat`)."""
        cache = self.__dict__.setdefault("_file_grouping_cache", {})
        if module not in cache:
            fid = self.column(module, "file_id")
            if len(fid) < 2 or bool((fid[1:] > fid[:-1]).all()):  # a record per file, in id order: no sort
                every = np.arange(len(fid))
                cache[module] = (fid.copy(), every, every, every)
                return cache[module]
            order = np.argsort(fid, kind="stable")
            s = fid[order]
            new = np.ones(len(s), dtype=bool)
            new[1:] = s[1:] != s[:-1]
            inv = np.empty(len(s), dtype=np.int64)
            inv[order] = np.cumsum(new) - 1
            cache[module] = (s[new], inv, order, np.flatnonzero(new))
        return cache[module]

    def per_file_sums(self, module: str, values: np.ndarray) -> np.ndarray:
        """Integer sums per file (in `file_groups` order) of per-record `values` (a row, or rows: one sum per
        row and file), exact in any order."""
        ids, _, order, starts = self._file_grouping(module)
        if not len(ids):
            return np.zeros(values.shape[:-1] + (0,), dtype=np.int64)
        if len(starts) == len(order):  # a record per file (a shared file's reduced record): nothing to add
            return values[..., order]
        return np.add.reduceat(values[..., order], starts, axis=-1)

    def per_file_total(self, module: str, *names: str) -> np.ndarray:
        """Integer sum per file (in `file_groups` order) of counters `names`, clipped at 0."""
        cache = self.__dict__.setdefault("_per_file_totals", {})
        key = (module, names)
        if key not in cache:
            cache[key] = self._per_file_total(module, names)
        return cache[key].copy()  # a new array each call, as before the cache: callers may write to it

    def _per_file_total(self, module: str, names: tuple) -> np.ndarray:
        c = self.records[module]
        ids, inv = self.file_groups(module)
        if names and isinstance(c, RecordCounters) and all(n in c.ints for n in names):
            rows = self.column(module, names[0]) if len(names) == 1 else self.counter_rows(module, names).sum(axis=0)
            return self.per_file_sums(module, rows)
        out = np.zeros(len(ids), dtype=np.int64)
        for n in names:
            values = self.column(module, n)
            if values.sum() < (1 << 53):  # float64 weights hold every partial sum exactly: bincount is exact
                out += np.bincount(inv, weights=values, minlength=len(ids)).astype(np.int64)
            else:
                np.add.at(out, inv, values)
        return out

    def per_file_max(self, module: str, name: str) -> np.ndarray:
        """Largest raw value (-1 kept) per file (in `file_groups` order) of counter `name`."""
        cache = self.__dict__.setdefault("_per_file_maxima", {})
        key = (module, name)
        if key not in cache:
            cache[key] = self._per_file_max(module, name)
        return cache[key].copy()  # a new array each call, as before the cache

    def _per_file_max(self, module: str, name: str) -> np.ndarray:
        raw = self.records[module].raw(name)
        ids, inv, order, starts = self._file_grouping(module)
        if raw.dtype == np.int64 and len(ids):
            return np.maximum.reduceat(raw[order], starts)
        out = np.full(len(ids), np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(out, inv, raw)
        return out

    def own_records(self, module: str) -> np.ndarray:
        """Mask of the records of one rank within 0..nprocs-1 (not shared, not out of range)."""
        cache = self.__dict__.setdefault("_own_records", {})
        if module not in cache:
            rank = self.column(module, "rank")
            cache[module] = (rank >= 0) & (rank < self.nprocs)
        return cache[module]

    def on_files_of(self, module: str, other: str) -> np.ndarray:
        """Mask of the records of `module` on a file that `other` has records of (np.isin of their file ids, by a
        search in `other`'s sorted ids: no set-up per call)."""
        fid = self.column(module, "file_id")
        if not self.has(other):
            return np.zeros(len(fid), dtype=bool)
        return in_sorted(fid, self.file_groups(other)[0])

    def add_per_rank(self, out: np.ndarray, module: str, values: np.ndarray) -> None:
        """Adds the `values` of `module`'s own records (`own_records`) to their ranks' places in `out`, in
        record order (np.add.at), without masks when every record is one rank's."""
        own = self.own_records(module)
        if own.all():
            np.add.at(out, self.column(module, "rank"), values)
        elif own.any():
            np.add.at(out, self.column(module, "rank")[own], values[own])

    def data_records(self, module: str) -> np.ndarray:
        """Mask of the records not on stdin/stdout/stderr (`std_ids`): a comparison per stream, a few at most
        (np.isin's set-up costs more on a few dozen records)."""
        cache = self.__dict__.setdefault("_data_records", {})
        if module not in cache:
            fid = self.column(module, "file_id")
            std = np.zeros(len(fid), dtype=bool)
            for f in self.std_ids:
                std |= fid == np.uint64(f)
            cache[module] = ~std
        return cache[module]

    def has(self, module: str) -> bool:
        """Does `module` have records? (`counters(module) is not None`, without building its table)"""
        c = self.records.get(module)
        return c is not None and len(c.ranks) > 0

    def has_counter(self, module: str, name: str) -> bool:
        """Has `module` records and its table a column `name`? (without building the table)"""
        return self.has(module) and self.records[module].has_column(name)

    # --- the layers the program used: what a recommendation may need (`Recommendation.needs`, fit.py) -------
    @property
    def layers(self) -> frozenset:
        """The layers this log shows the program used (`has_layer` of each of `insight.NEEDS`)."""
        return frozenset(n for n in NEEDS if self.has_layer(n))

    def has_layer(self, layer: str) -> bool:
        """Does the log show the program used `layer`? 'mpiio': MPI-IO records or trace; 'mpi': that, or more
        than one rank of an MPI launch; 'hdf5': H5F/H5D records; 'netcdf': PnetCDF records, or a netCDF-named
        file in HDF5's; 'lustre': a file on a Lustre mount, or Lustre layout records. Each judged once, when
        first asked (the advice's clauses and `fit.py` ask)."""
        known = self.__dict__.setdefault("_layers", {})
        if layer not in known:
            known[layer] = self._has_layer(layer)
        return known[layer]

    def _has_layer(self, layer: str) -> bool:
        if layer == "mpiio":
            traced = self.dxt.get("DXT_MPIIO")
            return self.has("MPI-IO") or bool(traced and traced["segments"])
        if layer == "mpi":
            return self.has_layer("mpiio") or (self.nprocs > 1 and self.ranks_noun == "ranks")
        if layer == "hdf5":
            return self.has("H5F") or self.has("H5D")
        if layer == "netcdf":
            return self.has("PNETCDF_FILE") or self.has("PNETCDF_VAR") or any(
                self.name(f).lower().endswith(NETCDF_SUFFIXES) for f in self.ids_in("H5F"))
        if layer == "lustre":
            return bool(self.lustre_files)
        raise ValueError(f"unknown layer {layer!r}")

    @cached_property
    def lustre_files(self) -> frozenset:
        """The names of the files on Lustre: with Lustre layout records, or on a mount of type lustre."""
        no_layouts = reader_arrays(self.log) is None and "file_id" not in self.log.lustre.columns
        names = set() if no_layouts else {self.name(f) for f in set(self.lustre_stripes[0].tolist())}
        files = self.log.files
        if files.height and "fs_type" in files.columns:
            names |= set(files.filter(pl.col("fs_type") == "lustre")["name"].to_list())
        return frozenset(names)

    @cached_property
    def file_systems(self) -> dict:
        """file name -> the type of the mount holding it, for the files whose mount the log names."""
        files = self.log.files
        if not files.height or "fs_type" not in files.columns:
            return {}
        known = files.filter(pl.col("fs_type").is_not_null() & (pl.col("fs_type") != ""))
        return dict(zip(known["name"].to_list(), known["fs_type"].to_list()))

    @cached_property
    def lustre_stripes(self) -> tuple:
        """(file id, stripe size) of every Lustre layout component, in the table's order (`log.lustre`)."""
        raw = reader_arrays(self.log)
        if raw is not None:
            recs = raw.lustre
            return (np.asarray(recs.file_id, dtype=np.uint64),
                    np.ascontiguousarray(recs.values[:, COMPONENT_FIELDS.index("stripe_size")]).astype(np.int64))
        lus = self.log.lustre
        return lus["file_id"].to_numpy().astype(np.uint64), lus["stripe_size"].to_numpy().astype(np.int64)

    def ranks_on_file(self, module: str) -> pl.DataFrame:
        """file_id -> how many ranks opened it in `module` (a shared record counts as every rank)."""
        cache = self.__dict__.setdefault("_ranks_on_file_cache", {})
        if module not in cache:
            cache[module] = self._ranks_on_file(module)
        return cache[module]

    def _ranks_on_file(self, module: str) -> pl.DataFrame:
        if not self.has(module):
            return pl.DataFrame(schema={"file_id": pl.UInt64, "nranks": pl.Int64})
        return pl.DataFrame({"file_id": pl.Series(self.file_groups(module)[0], dtype=pl.UInt64),
                             "nranks": pl.Series(self.file_ranks(module), dtype=pl.Int64)})

    def file_ranks(self, module: str) -> np.ndarray:
        """How many ranks opened each file of `module` (in `file_groups` order; a shared record counts as every
        rank): `ranks_on_file` in numpy (a group-by's fixed cost is most of it on a few dozen records)."""
        return self.memo(("file_ranks", module), lambda: self._file_ranks(module))

    def _file_ranks(self, module: str) -> np.ndarray:
        ids, inv = self.file_groups(module)
        rank = self.column(module, "rank")
        order = np.lexsort((rank, inv))  # by file, then rank: a new (file, rank) where either changes
        f, r = inv[order], rank[order]
        first = np.concatenate(([True], (f[1:] != f[:-1]) | (r[1:] != r[:-1])))
        distinct = np.bincount(f[first], minlength=len(ids))
        shared = np.bincount(inv, weights=rank < 0, minlength=len(ids)) > 0
        return np.where(shared, self.nprocs, distinct).astype(np.int64)

    def counter_window(self, module: str, file_ids=None, ops=("READ", "WRITE")):
        """(first start, last end) of the given operations from the counters' timestamps, or None."""
        df = self.counters(module)
        if df is None:
            return None
        prefix = COUNTER_PREFIX.get(module, module)  # H5F's counters are named after the module
        starts = [f"{prefix}_F_{op}_START_TIMESTAMP" for op in ops]
        ends = [f"{prefix}_F_{op}_END_TIMESTAMP" for op in ops]
        if not all(c in df.columns for c in starts + ends):
            return None
        if file_ids is not None:
            df = df.filter(pl.col("file_id").is_in(pl.Series(list(file_ids), dtype=pl.UInt64).implode()))
        if df.is_empty():
            return None
        s = df.select(pl.min_horizontal([pl.when(pl.col(c) > 0).then(pl.col(c)) for c in starts]).min()).item()
        e = df.select(pl.max_horizontal([pl.col(c) for c in ends]).max()).item()
        if s is None or e is None or e <= 0 or e < s:
            return None
        return (float(s), float(e))

    @cached_property
    def slowest_rank_io_times(self) -> dict:
        """module -> the I/O time of its slowest rank (`measures.slowest_rank_time`), for every layer."""
        return measures.slowest_rank_times(self.records)

    @cached_property
    def slowest_rank_io_time(self) -> float:
        """The job's I/O time (`measures.job_io_time`): what the busiest rank spent in I/O."""
        return measures.job_io_time(self.slowest_rank_io_times)

    @cached_property
    def io_time_share(self):
        """`measures.io_share` of the job's I/O time (None for a run of no recorded time)."""
        return measures.io_share(self.slowest_rank_io_time, self.run_time)

    def matters(self, seconds: float) -> bool:
        """Is a problem that costs the busiest rank `seconds` worth a warning for this run? (`common.matters`)

        Yes when it is at least `min_stake_floor` and either at least `min_runtime_share` of the run time or
        at least `min_stake_seconds` (for long runs, a minute of every rank waiting is worth fixing even if it
        is a small share).
        """
        values = {RUN_TIME: self.run_time, "stake": seconds}
        return evaluate(values, {"m": matters(pl.col("stake"), self.th)}, MATTERS_DTYPES)["m"]

    # --- the trace ------------------------------------------------------------------------------
    def trace_truncated(self, module: str) -> bool:
        d = self.dxt.get(module)
        return bool(d and d["truncated"])

    def trace_complete(self, module: str, op: str | None = None) -> bool:
        """True when the module was traced and holds every operation the counters recorded."""
        d = self.dxt.get(module)
        if not d or not d["segments"]:
            return False
        if op is None:
            return not d["truncated"]
        counted = d["counter_reads" if op == "read" else "counter_writes"]
        traced = d["reads" if op == "read" else "writes"]
        return not d["partial"] and (counted is None or traced >= counted)

    @cached_property
    def seg(self) -> pl.DataFrame:
        if not self.log.has_dxt:
            return pl.DataFrame(schema={"module": MODULE, "file_id": pl.UInt64, "rank": pl.Int64,
                                        "op": OP, "offset": pl.Int64, "length": pl.Int64,
                                        "start": pl.Float64, "end": pl.Float64})
        seg = self.log.segments
        cols = ["module", "file_id", "rank", "op", "offset", "length", "start", "end"]
        if "osts" in seg.columns:
            cols.append("osts")
        return seg.select(cols)

    def _seg_of(self, module: str) -> pl.DataFrame:
        """The traced operations of one DXT module; without a filter when the trace is all or none of it
        (a Series test costs far less than a query on small traces)."""
        if not self.log.has_dxt:
            return self.seg
        mine = self.seg["module"] == module
        if mine.all():
            return self.seg
        return self.seg.filter(mine) if mine.any() else self.seg.clear()

    @cached_property
    def seg_posix(self) -> pl.DataFrame:
        return self._seg_of("DXT_POSIX")

    @cached_property
    def seg_mpiio(self) -> pl.DataFrame:
        return self._seg_of("DXT_MPIIO")

    # the trace as numpy columns (analysis.segments): what the per-log findings compute on
    @cached_property
    def trace(self) -> Segments:
        """Every traced operation, in the rows' order of `seg`."""
        return log_segments(self.log)

    @cached_property
    def trace_posix(self) -> Segments:
        return self.trace.of_module("DXT_POSIX")

    @cached_property
    def trace_mpiio(self) -> Segments:
        return self.trace.of_module("DXT_MPIIO")

    @cached_property
    def trace_app(self) -> Segments:
        """`seg_app` as numpy columns: MPI-IO operations for files traced at MPI-IO, POSIX for the rest (MPI-IO's
        rows first, then POSIX's, each in trace order)."""
        seg, mpi = self.trace, self.trace_mpiio
        if seg.empty or mpi.empty:
            return self.trace_posix
        posix_only = np.flatnonzero((seg.module == MODULE_CODES["DXT_POSIX"])
                                    & ~is_in(seg.file_id, distinct(mpi.file_id)))
        if not len(posix_only):  # every POSIX file traced at MPI-IO: the MPI-IO part itself
            return mpi
        return seg.take(np.concatenate([np.flatnonzero(seg.module == MODULE_CODES["DXT_MPIIO"]), posix_only]))

    def rank_groups(self, seg: Segments) -> tuple:
        """`segments.groups(seg.rank)` of one of this log's traces (`trace_posix`, `trace_app`...): (the first
        operation of each rank, ranks ascending; each operation's rank number), once per trace (the rules'
        stakes, RANK_IMBALANCE's loads and STRAGGLER group the same ranks)."""
        return self._of_trace("rank_groups", seg, lambda: groups(seg.rank))

    def rank_times(self, seg: Segments) -> np.ndarray:
        """The time each rank of `rank_groups` spent in the traced operations of `seg`: the float sums of their
        durations per rank (`group_sums`), once per trace."""
        def compute():
            first, inv = self.rank_groups(seg)
            return group_sums(inv, seg.duration, len(first))
        return self._of_trace("rank_times", seg, compute)

    def _of_trace(self, name: str, seg: Segments, compute):
        """`compute()` once per (name, trace): the trace kept beside its value, so that its id stays its own."""
        cache = self.__dict__.setdefault("_trace_memo", {})
        key = (name, id(seg))
        if key not in cache:
            cache[key] = (seg, compute())
        return cache[key][1]

    @staticmethod
    def trace_window(seg: Segments):
        """(first start, last end) of some traced operations, or None (`seg_window` of numpy columns)."""
        if seg.empty:
            return None
        return (float(seg.start.min()), float(seg.end.max()))

    @cached_property
    def posix_transitions(self):
        """Every traced POSIX request after each rank's first on a file, per operation kind, with the previous
        one's offset and end (analysis.access.transitions): sorted once, shared by the request findings."""
        return transitions(self.trace_posix)

    @cached_property
    def posix_patterns(self) -> dict:
        """The access pattern of each file at POSIX, per operation kind (analysis.access): numpy columns
        file_id, op (segments.WRITE/READ), pattern, and the shares behind it."""
        seg = self.trace_posix
        v = classify_segments(seg, (seg.file_id, seg.op), self.posix_transitions)
        return {**v, "file_id": seg.file_id[v["first"]], "op": seg.op[v["first"]]}

    @cached_property
    def posix_random(self) -> dict:
        """`posix_patterns`' file_id and op, and whether each pattern is "random" (what RANDOM_ACCESS reads of
        them): from the transitions' shares alone (`access.random_groups`), unless classified already."""
        if "posix_patterns" in self.__dict__:
            pat = self.posix_patterns
            return {"file_id": pat["file_id"], "op": pat["op"], "random": pat["pattern"] == "random"}
        seg = self.trace_posix
        first, random = random_groups(seg, (seg.file_id, seg.op), self.posix_transitions)
        return {"file_id": seg.file_id[first], "op": seg.op[first], "random": random}

    @cached_property
    def seg_app(self) -> pl.DataFrame:
        """The layer the application called: MPI-IO operations for files traced at MPI-IO, POSIX for the rest."""
        if self.seg.is_empty() or self.seg_mpiio.is_empty():
            return self.seg_posix if not self.seg.is_empty() else self.seg
        mpi_files = self.seg_mpiio["file_id"].unique().implode()
        return pl.concat([self.seg_mpiio,
                          self.seg_posix.filter(~pl.col("file_id").is_in(mpi_files))])

    @cached_property
    def hosts(self) -> int:
        raw = reader_arrays(self.log)
        if raw is not None:  # the reader's host names: no table built
            return len({h for recs in raw.dxt.values() if len(recs.ids) for h in recs.hostnames})
        recs = self.log.dxt_records
        if recs.is_empty():
            return 0
        return int(recs["hostname"].n_unique())

    def seg_window(self, seg: pl.DataFrame):
        if seg.is_empty():
            return None
        lo, hi = seg["start"].min(), seg["end"].max()  # Series reductions: no query's fixed cost
        return (float(lo), float(hi)) if lo is not None else None
