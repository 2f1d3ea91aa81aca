"""Every number a check compares against: documented defaults, `NAME=VALUE` overrides and a TOML config file.

Values are read by `iolens.units` (as knobs and tune spaces are): bytes as `4096`, `64k`, `64KiB`, `1MiB`,
`1G` (binary multiples: `64kb` is 65,536 bytes too); shares as `0.1` or `10%`; seconds as `2`, `500ms`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ... import units
from ...units import GiB, KiB, MiB


@dataclass(frozen=True)
class Threshold:
    name: str
    default: float
    kind: str  # 'bytes' | 'share' | 'count' | 'ratio' | 'seconds'
    help: str


DEFINITIONS = (
    # requests
    Threshold("small_request_bytes", 100 * KiB, "bytes",
              "A request of at most this size is small. Counters only know Darshan's size bins (100 B, 1 KiB, "
              "10 KiB, 100 KiB, 1 MiB, 4 MiB, ...): the value is rounded down to a bin edge there."),
    Threshold("small_min_share", 0.10, "share", "SMALL_IO: small requests are at least this share of the POSIX "
                                                "reads or writes ..."),
    Threshold("small_min_ops", 1000, "count", "... and at least this many."),
    Threshold("large_request_bytes", 1 * MiB, "bytes",
              "Requests of at least this size are efficient even when random or independent "
              "(RANDOM_ACCESS and NO_COLLECTIVE_IO only count smaller ones)."),
    Threshold("misaligned_min_share", 0.10, "share",
              "MISALIGNED_IO: requests at least one alignment unit long that start off a block/stripe boundary "
              "are at least this share of the POSIX requests ..."),
    Threshold("misaligned_min_ops", 1000, "count", "... and at least this many (or `misaligned_min_bytes`)."),
    Threshold("misaligned_min_bytes", 64 * MiB, "bytes",
              "... or they move at least this many bytes (128 misaligned 4 MiB writes are a problem)."),
    Threshold("random_min_share", 0.20, "share",
              "RANDOM_ACCESS: requests that go backwards in the file (per rank) are at least this share ..."),
    Threshold("random_min_ops", 1000, "count", "... and at least this many."),
    # ranks
    Threshold("imbalance_ratio", 2.0, "ratio",
              "RANK_IMBALANCE: the busiest rank's I/O time (or bytes) is at least this multiple of the mean."),
    Threshold("imbalance_min_bytes", 16 * MiB, "bytes",
              "RANK_IMBALANCE by bytes: the busiest rank moves at least this many bytes more than the mean rank "
              "(by operations: at least `small_min_ops` more operations)."),
    Threshold("single_aggregator_min_ranks", 256, "count",
              "RANK_IMBALANCE from counters only: one rank doing nearly all file-system I/O of a collectively "
              "written file is flagged when the file was opened by at least this many ranks (the node count "
              "is unknown without DXT; with DXT, fewer aggregators than nodes is flagged)."),
    Threshold("straggler_min_delay", 0.05, "seconds",
              "STRAGGLER: a rank's I/O ends at least this long after the median rank's (only against timer "
              "jitter: the share below decides) ..."),
    Threshold("straggler_min_delay_share", 0.33, "share", "... and at least this share of the I/O window."),
    Threshold("serialized_min_share", 0.5, "share",
              "SERIALIZED_IO: one rank is the only rank doing I/O for at least this share of the I/O window."),
    Threshold("serialized_gap", 0.01, "seconds",
              "Gaps shorter than this between one rank's operations count as busy (SERIALIZED_IO)."),
    Threshold("strong_share", 0.5, "share",
              "A pattern covering at least this share (of the requests, bytes, or the busiest rank's I/O time) "
              "is structural: at least a warning on any run, however cheap it is on the machine that made the "
              "log (see the cost model)."),
    Threshold("min_runtime_share", 0.05, "share",
              "Imbalance, stragglers, serialization and metadata only matter when the time at stake is at least "
              "this share of the run time."),
    Threshold("min_stake_seconds", 60.0, "seconds",
              "... or at least this long (a minute of every rank waiting is worth fixing in a long run)."),
    Threshold("min_stake_floor", 0.25, "seconds",
              "... but never when less than this (tiny test runs: a 30 ms open is not a problem)."),
    Threshold("min_io_time_share", 0.01, "share",
              "When the slowest rank spends less than this share of the run time in I/O, warnings are "
              "demoted to info: fixing them cannot speed the job up noticeably."),
    # MPI-IO
    Threshold("no_collective_min_ops", 1000, "count",
              "NO_COLLECTIVE_IO: at least this many independent MPI-IO requests on shared files ..."),
    Threshold("no_collective_min_share", 0.5, "share", "... at least this share of the MPI-IO requests ..."),
    Threshold("no_collective_min_ops_per_rank", 100, "count",
              "... and at least this many per rank on average (a few independent header reads per rank cost "
              "nothing)."),
    Threshold("sieving_min_share", 0.10, "share",
              "DATA_SIEVING: POSIX reads the application did not ask for are at least this share of the bytes "
              "written to the file, or their read time is at least this share of the POSIX time on it ..."),
    Threshold("sieving_min_bytes", 16 * MiB, "bytes", "... and at least this many bytes."),
    Threshold("mpiio_overhead_min_share", 0.25, "share",
              "MPIIO_OVERHEAD: the MPI-IO read/write time not spent in POSIX operations (two-phase exchange, "
              "synchronisation, waiting for aggregators) is at least this share of the MPI-IO time (info) ..."),
    Threshold("mpiio_overhead_warning_share", 0.5, "share", "... a warning from this share ..."),
    Threshold("mpiio_overhead_critical_share", 0.8, "share", "... critical from this share ..."),
    Threshold("mpiio_overhead_min_seconds", 0.01, "seconds",
              "... and the slowest rank spends at least this long above the file system (only against timer "
              "jitter: the share decides the severity)."),
    # HDF5
    Threshold("hdf5_meta_min_share", 0.5, "share",
              "HDF5_METADATA: metadata time (H5F/H5D open, close, flush) is at least this share of the HDF5 "
              "time, or small metadata-sized writes are at least this share of the POSIX writes to HDF5 files."),
    Threshold("hdf5_meta_request_bytes", 4 * KiB, "bytes",
              "POSIX writes to an HDF5 file of at most this size are counted as metadata writes."),
    # Lustre
    Threshold("lustre_large_file_bytes", 1 * GiB, "bytes",
              "LUSTRE_STRIPING: shared files at least this large should be striped over several OSTs."),
    Threshold("ost_imbalance_ratio", 2.0, "ratio",
              "OST_IMBALANCE: the busiest OST moves at least this multiple of the mean OST's bytes ..."),
    Threshold("ost_min_bytes", 1 * GiB, "bytes", "... and the job moves at least this many bytes on Lustre."),
    Threshold("slow_ost_ratio", 4.0, "ratio",
              "SLOW_OST: single-stripe files on one OST take at least this multiple of the typical time per byte "
              "(median over the other OSTs) ..."),
    Threshold("slow_ost_min_files", 3, "count", "... over at least this many files on that OST."),
    # metadata
    Threshold("metadata_min_share", 0.30, "share",
              "METADATA_HEAVY: metadata time is at least this share of the POSIX/STDIO I/O time."),
    Threshold("tiny_file_bytes", 64 * KiB, "bytes", "A file whose extent is at most this size is tiny."),
    Threshold("tiny_files_min", 1000, "count", "METADATA_HEAVY: at least this many tiny files ..."),
    Threshold("tiny_files_min_share", 0.5, "share", "... that are at least this share of the files."),
    # redundancy
    Threshold("redundant_ratio", 1.5, "ratio",
              "REDUNDANT_READS/WRITES: bytes moved are at least this multiple of the file extent ..."),
    Threshold("redundant_min_bytes", 64 * MiB, "bytes", "... and the excess is at least this many bytes."),
    # interfaces
    Threshold("fsync_min_count", 100, "count", "FSYNC_HEAVY: at least this many fsync/fdatasync calls ..."),
    Threshold("fsync_per_write", 0.1, "ratio", "... and at least this many per write."),
    Threshold("stdio_min_share", 0.10, "share",
              "STDIO_HEAVY: stdio carries at least this share of the bytes or of the I/O time ..."),
    Threshold("stdio_min_bytes", 16 * MiB, "bytes", "... and at least this many bytes (or 1 s of I/O time)."),
    # the file-system cost model (costmodel.py); `--fs-profile FILE` sets these too
    Threshold("fs_request_latency", 0.5e-3, "seconds",
              "Cost model: service time of one request at a storage server (RPC + seek) when requests "
              "are small or random."),
    Threshold("fs_lock_latency", 2e-3, "seconds",
              "Cost model: one extent-lock conflict (a request sharing a stripe with another rank's request)."),
    Threshold("fs_ost_bandwidth", 1 * GiB, "bytes", "Cost model: bytes per second one storage server (OST) "
                                                    "streams."),
    Threshold("fs_osts", 8, "count", "Cost model: storage servers (OSTs) a shared file is spread over."),
    Threshold("fs_scale_ranks", 1024, "count",
              "Cost model: the rank count the projection is made for (weak scaling: every rank does what "
              "the average rank of this run did)."),
)
FS_PREFIX = "fs_"
BY_NAME = {t.name: t for t in DEFINITIONS}
DEFAULTS = {t.name: t.default for t in DEFINITIONS}


class Thresholds(dict):
    """name -> value, starting from the documented defaults."""

    def __init__(self, overrides=None):
        super().__init__(DEFAULTS)
        self.explicit = set()  # names given by the user (the cost model's fits never replace these)
        for name, value in (overrides or {}).items():
            self.set(name, value)

    def set(self, name: str, value) -> None:
        name = name.strip().lower().replace("-", "_")
        if name not in BY_NAME:
            raise ValueError(f"unknown threshold {name!r} (known: {', '.join(sorted(BY_NAME))})")
        self[name] = parse_value(BY_NAME[name], value)
        self.explicit.add(name)

    def __getattr__(self, name):
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None

    def changed(self) -> dict:
        return {k: v for k, v in self.items() if v != DEFAULTS[k]}


def parse_value(th: Threshold, value) -> float:
    """The value in the threshold's unit (`iolens.units.parse`); ValueError names the threshold."""
    try:
        number = units.parse_size(value) if th.kind == "bytes" else units.parse(value, th.kind)
    except units.UnitError as exc:
        raise ValueError(f"{th.name}: {exc}") from None
    return int(number) if th.kind in ("bytes", "count") else number


def parse_assignment(text: str) -> tuple:
    """'NAME=VALUE' -> (name, value); raises ValueError with a one-line reason."""
    if "=" not in text:
        raise ValueError(f"expected NAME=VALUE, got {text!r}")
    name, value = text.split("=", 1)
    name = name.strip().lower().replace("-", "_")
    if name not in BY_NAME:
        raise ValueError(f"unknown threshold {name!r} (known: {', '.join(sorted(BY_NAME))})")
    return name, parse_value(BY_NAME[name], value.strip())


def load_config(path: str) -> dict:
    """Threshold overrides from a TOML file: a `[thresholds]` table (or top-level keys)."""
    with open(path, "rb") as fh:
        raw = fh.read()
    data = _load_toml(raw.decode("utf-8"))
    table = data.get("thresholds", data)
    if not isinstance(table, dict):
        raise ValueError(f"{path}: [thresholds] must be a table")
    out = {}
    for name, value in table.items():
        if isinstance(value, dict):
            continue  # other sections
        key = name.strip().lower().replace("-", "_")
        if key not in BY_NAME:
            raise ValueError(f"{path}: unknown threshold {name!r}")
        out[key] = parse_value(BY_NAME[key], value)
    return out


def load_fs_profile(path: str) -> dict:
    """Cost-model overrides from a TOML or JSON file: keys with or without the `fs_` prefix (`osts = 16`,
    `request_latency = "1ms"`), at the top level or in an `[fs]` table; `name` labels the profile."""
    import json

    with open(path, "rb") as fh:
        text = fh.read().decode("utf-8")
    if path.lower().endswith(".json") or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}: not valid JSON: {exc}") from None
    else:
        data = _load_toml(text)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a table of cost-model values")
    table = data.get("fs", data)
    out = {}
    for name, value in table.items():
        key = name.strip().lower().replace("-", "_")
        if key == "name" or isinstance(value, dict):
            continue
        if not key.startswith(FS_PREFIX):
            key = FS_PREFIX + key
        if key not in BY_NAME:
            known = ", ".join(t.name[len(FS_PREFIX):] for t in DEFINITIONS if t.name.startswith(FS_PREFIX))
            raise ValueError(f"{path}: unknown cost-model value {name!r} (known: {known})")
        out[key] = parse_value(BY_NAME[key], value)
    return out


def _load_toml(text: str) -> dict:
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
        return _mini_toml(text)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"not valid TOML: {exc}") from None


def _mini_toml(text: str) -> dict:
    """The subset iolens configs use: [section] headers and `key = number|"string"` lines."""
    root: dict = {}
    table = root
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            table = root
            for part in line.strip("[]").split("."):
                table = table.setdefault(part.strip(), {})
            continue
        if "=" not in line:
            raise ValueError(f"line {lineno}: expected key = value")
        key, value = (s.strip() for s in line.split("=", 1))
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            table[key] = value[1:-1]
        else:
            try:
                table[key] = int(value)
            except ValueError:
                try:
                    table[key] = float(value)
                except ValueError:
                    raise ValueError(f"line {lineno}: cannot read value {value!r}") from None
    return root
