"""The search space: which knobs tune may turn, the values each may take, and how a value reaches the run.

A knob is named `<namespace>.<key>`: `romio.cb_nodes` (a ROMIO hint, written to a hints file named by
ROMIO_HINTS), `env.NAME` (an environment variable), `arg.NAME` (a `{NAME}` placeholder in the command),
`hdf5.*` and `netcdf.*` (set by iolens' preloaded knob layer, `iolens.knobs`, on the unchanged program).
How a namespace reaches the process is one entry of NAMESPACES.

The space is a grid (the product of the knobs' value lists) that is never enumerated as runs: `grid()`
gives value indices for every configuration up to a limit, a uniform sample beyond.
"""
from __future__ import annotations

import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..knobs.registry import KnobError, knob, suggest
from ..output import write_text
from ..units import MiB, UnitError, parse_size

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

GRID_LIMIT = 100_000  # past this many configurations the model predicts over a uniform sample
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


class SpaceError(Exception):
    """One line saying what is wrong with a space."""


@dataclass
class Application:
    """What one configuration does to a run: the command, extra variables, the hints file's lines."""
    command: list
    env: dict = field(default_factory=dict)
    hints: dict = field(default_factory=dict)
    args: dict = field(default_factory=dict)
    knobs: dict = field(default_factory=dict)  # hdf5.* / netcdf.*: handed to collect.run's knob layer

    def hints_text(self) -> str:
        return "".join(f"{k} {v}\n" for k, v in self.hints.items())


@dataclass(frozen=True)
class Namespace:
    """How knobs of one namespace reach the command: `setter(application, key, text)`; None: only a code
    change can set them (listed as code changes to try, never run)."""
    name: str
    how: str
    setter: Callable | None = None

    @property
    def runtime(self) -> bool:
        return self.setter is not None


NAMESPACES = {
    "romio": Namespace("romio", "a ROMIO hints file named by ROMIO_HINTS", lambda a, k, v: a.hints.__setitem__(k, v)),
    "env": Namespace("env", "an environment variable of the command", lambda a, k, v: a.env.__setitem__(k, v)),
    "arg": Namespace("arg", "a {NAME} placeholder in the command", lambda a, k, v: a.args.__setitem__(k, v)),
    "hdf5": Namespace("hdf5", "an HDF5 property set by iolens' preloaded knob layer (docs/knobs.md)",
                      lambda a, k, v: a.knobs.__setitem__(f"hdf5.{k}", v)),
    "netcdf": Namespace("netcdf", "a netCDF setting made by iolens' preloaded knob layer (docs/knobs.md)",
                        lambda a, k, v: a.knobs.__setitem__(f"netcdf.{k}", v)),
}


def register_namespace(name: str, how: str, setter: Callable) -> None:
    """Make a namespace's knobs runnable: a knob layer that applies them at run time registers its setter."""
    NAMESPACES[name] = Namespace(name, how, setter)


@dataclass
class Dimension:
    """One axis of the grid: a knob (by name, as `iolens.knobs` defines it) and the values tune may give it."""
    name: str  # "romio.cb_nodes"
    values: list  # the candidate values, in order (numbers ascending)
    why: str = ""  # what brought it into the space
    default: object = None  # the baseline's value (None: not set in the baseline)

    @property
    def namespace(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def key(self) -> str:
        return self.name.split(".", 1)[1]

    @property
    def numeric(self) -> bool:
        return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in self.values)

    def to_dict(self) -> dict:
        return {"name": self.name, "values": list(self.values), "why": self.why, "default": self.default}

    @classmethod
    def from_dict(cls, data: dict) -> "Dimension":
        return cls(data["name"], data["values"], data["why"], data["default"])


@dataclass
class Space:
    knobs: list = field(default_factory=list)  # the Dimension of each runnable knob
    code_changes: list = field(default_factory=list)  # knobs only a code change can set: listed, never run
    source: str = "default"

    @property
    def names(self) -> list:
        return [k.name for k in self.knobs]

    @property
    def size(self) -> int:
        return math.prod(len(k.values) for k in self.knobs) if self.knobs else 0

    def grid(self, limit: int = GRID_LIMIT, seed: int = 0) -> np.ndarray:
        """Value indices (configurations × knobs): the whole grid up to `limit`, else `limit` uniform draws
        (each index drawn alone, so nothing of the size of the grid is ever built)."""
        dims = [len(k.values) for k in self.knobs]
        if not dims:
            return np.zeros((0, 0), dtype=np.int32)
        if self.size <= limit:
            return np.stack(np.unravel_index(np.arange(self.size), dims), axis=1).astype(np.int32)
        rng = np.random.default_rng(seed)
        return np.stack([rng.integers(0, d, size=limit) for d in dims], axis=1).astype(np.int32)

    def config(self, indices) -> dict:
        return {k.name: k.values[int(i)] for k, i in zip(self.knobs, indices)}

    def indices(self, config: dict) -> list:
        return [k.values.index(config[k.name]) for k in self.knobs]

    def baseline(self) -> dict:
        """The configuration the command runs with as given: placeholders at their default."""
        return {k.name: k.default for k in self.knobs}

    def to_dict(self) -> dict:
        return {"source": self.source, "size": self.size, "knobs": [k.to_dict() for k in self.knobs],
                "code_changes": [k.to_dict() for k in self.code_changes]}


# --- applying a configuration ---------------------------------------------------------------------

def apply(config: dict, command: list) -> Application:
    """The run of `command` under `config` ({knob name: value}; None leaves a knob as the baseline has it)."""
    app = Application(list(command))
    for name, value in config.items():
        if value is None:
            continue
        ns, key = name.split(".", 1)
        if ns not in NAMESPACES or not NAMESPACES[ns].runtime:
            raise SpaceError(f"{name}: needs a code change; it cannot be set at run time")
        NAMESPACES[ns].setter(app, key, value_text(value))
    app.command = substitute(command, app.args)
    return app


def substitute(command: list, args: dict) -> list:
    return [PLACEHOLDER.sub(lambda m: args.get(m.group(1), m.group(0)), word) for word in command]


def value_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def placeholders(command: list) -> set:
    return {m for word in command for m in PLACEHOLDER.findall(word)}


# --- the user's space (--space FILE) ----------------------------------------------------------------

def load_space(path, command: list) -> Space:
    """A TOML space: a table per namespace, each key a list of values or a range
    `{min = "1MiB", max = "64MiB"}` (log scale: powers of `base`, 2 by default, or `steps` points)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise SpaceError(f"{path}: cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise SpaceError(f"{path}: not valid TOML: {exc}") from None
    space = Space(source=str(path))
    for ns, table in data.items():
        if not isinstance(table, dict):
            raise SpaceError(f"{path}: '{ns}' must be a table of knobs ([{ns}])")
        if ns not in NAMESPACES:
            raise SpaceError(f"{path}: unknown knob namespace '{ns}' (known: {', '.join(NAMESPACES)})")
        for key, spec in table.items():
            dimension = _dimension(f"{ns}.{key}", spec, path)
            (space.knobs if NAMESPACES[ns].runtime else space.code_changes).append(dimension)
    check_placeholders(space, command)
    return space


def _dimension(name: str, spec, path) -> Dimension:
    default = None
    if isinstance(spec, dict) and "values" in spec:
        default, spec = spec.get("default"), spec["values"]
    if isinstance(spec, list):
        if not spec:
            raise SpaceError(f"{path}: {name}: an empty list of values")
        values = list(spec)
    elif isinstance(spec, dict):
        default = spec.get("default")
        values = log_range(spec, name, path)
        default = _size(default, name, path) if default is not None else None  # a range's values are sizes
    else:
        values = [spec]
    read = _reader(name, path)
    values, default = list(dict.fromkeys(read(v) for v in values)), read(default) if default is not None else None
    if name.startswith("arg.") and default is None:
        default = values[0]  # a placeholder needs a value in the baseline run too
    if default is not None and default not in values:
        values = [default, *values]
    return Dimension(name, values, why="--space", default=default)


def _reader(name: str, path):
    """How a value of this knob is read: a size knob's values as `iolens run --set` reads them (`64k` is
    65,536 bytes, `iolens.units`), any other as written (ROMIO reads its own text)."""
    if name.split(".", 1)[0] not in ("romio", "hdf5", "netcdf"):
        return lambda value: value
    try:
        definition = knob(name)
    except KnobError as exc:
        raise SpaceError(f"{path}: {name}: {exc}") from None
    if definition.kind != "size":
        return lambda value: value

    def read(value):
        try:
            return definition.parse(value)
        except KnobError as exc:
            raise SpaceError(f"{path}: {name} = {value!r}: {exc}") from None
    return read


def log_range(spec: dict, name: str, path) -> list:
    try:
        lo, hi = _size(spec["min"], name, path), _size(spec["max"], name, path)
    except KeyError as exc:
        raise SpaceError(f"{path}: {name}: a range needs min and max (missing {exc.args[0]})") from None
    if not 0 < lo <= hi:
        raise SpaceError(f"{path}: {name}: a log-scale range needs 0 < min <= max")
    if "steps" in spec:
        n = int(spec["steps"])
        if n < 1:
            raise SpaceError(f"{path}: {name}: steps must be at least 1")
        raw = np.geomspace(lo, hi, n) if n > 1 else np.array([lo])
        return sorted({int(round(v)) for v in raw})
    base = float(spec.get("base", 2))
    if base <= 1:
        raise SpaceError(f"{path}: {name}: base must be above 1")
    out, v = [], lo
    while v <= hi * (1 + 1e-9):
        out.append(int(round(v)))
        v *= base
    return out


def _size(value, name: str, path) -> int:
    """A range's bound or default: bytes, as every size iolens reads (`iolens.units.parse_size`)."""
    try:
        return parse_size(value)
    except UnitError as exc:
        raise SpaceError(f"{path}: {name}: {exc}") from None


def check_placeholders(space: Space, command: list) -> None:
    used, declared = placeholders(command), {k.key for k in space.knobs if k.namespace == "arg"}
    if used - declared:
        raise SpaceError(f"the command has {', '.join('{' + n + '}' for n in sorted(used - declared))} but the "
                         "space gives no values for it (add [arg] NAME = [...] to --space)")
    if declared - used:
        raise SpaceError(f"the space has arg.{sorted(declared - used)[0]} but the command has no "
                         f"{{{sorted(declared - used)[0]}}} placeholder")


def write_knob_file(config: dict, path) -> Path:
    """best.toml: dotted knob names, the format `iolens run --set-file` takes."""
    lines = ["# iolens tune: the best configuration (iolens run --set-file FILE)"]
    for name, value in config.items():
        if value is None:
            continue
        if name.startswith("arg."):  # a placeholder of the command: best.sh holds the command line with it
            lines.append(f"# {name} = {value_text(value)} (in best.sh's command line)")
            continue
        ns, key = name.split(".", 1)
        text = value_text(value)
        literal = text if isinstance(value, (int, float)) and not isinstance(value, bool) else _toml_string(text)
        lines.append(f"{ns}.{_toml_key(key)} = {literal}")
    write_text(path, "\n".join(lines) + "\n")
    return Path(path)


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_string(key)


# --- the default space: from the baseline's log and its diagnosis ------------------------------------

CB_BUFFER_SIZES = [1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB]  # ROMIO's default is 16 MiB
IND_BUFFER_SIZES = [256 << 10, 1 * MiB, 4 * MiB, 16 * MiB]
STRIPE_SIZES = [1 * MiB, 4 * MiB, 16 * MiB, 64 * MiB]


def default_space(log, insights: list, measures: dict) -> Space:
    """Every runtime knob that applies to the I/O the baseline did, with domains scaled to the job, the
    knobs the diagnosis' recommendations name first. `measures`: the baseline's `runs.key_measures`."""
    nprocs = max(1, int(log.job["nprocs"]))
    coll = {op: measures.get(f"collective_{op}s") or 0 for op in ("write", "read")}
    indep = {op: measures.get(f"independent_{op}s") or 0 for op in ("write", "read")}
    knobs = []
    if coll["write"] or coll["read"]:
        for op in ("write", "read"):
            if coll[op]:
                knobs.append(Dimension(f"romio.romio_cb_{op}", ["enable", "disable"],
                                       f"collective MPI-IO {op}s: collective buffering on or off"))
        knobs.append(Dimension("romio.cb_nodes", _powers_of_two(nprocs), f"aggregators, up to the {nprocs} ranks"))
        knobs.append(Dimension("romio.cb_buffer_size", CB_BUFFER_SIZES, "the collective buffer of each aggregator"))
        if _hosts(log) > 1:
            knobs.append(Dimension("romio.cb_config_list", ["*:1", "*:*"], "aggregators per node"))
    for op, short in (("write", "wr"), ("read", "rd")):
        if indep[op]:
            knobs.append(Dimension(f"romio.romio_ds_{op}", ["enable", "disable"],
                                   f"independent MPI-IO {op}s: data sieving"))
            knobs.append(Dimension(f"romio.ind_{short}_buffer_size", IND_BUFFER_SIZES,
                                   f"the data-sieving {op} buffer"))
    if (indep["write"] or indep["read"]) and (coll["write"] or coll["read"]):
        knobs.append(Dimension("romio.romio_no_indep_rw", ["true", "false"], "only aggregators open the file"))
    if _on_lustre(log):
        knobs.append(Dimension("romio.striping_factor", _powers_of_two(_max_osts(log)),
                               "Lustre stripe count (new files)"))
        knobs.append(Dimension("romio.striping_unit", STRIPE_SIZES, "Lustre stripe size (new files)"))
    space = Space(knobs=_by_diagnosis(knobs, insights), source="default")
    modules = {m["name"] for m in log.job["modules"] if m["records"]}
    if modules & {"H5F", "H5D"}:
        for dimension in hdf5_knobs(log, measures):
            (space.knobs if NAMESPACES["hdf5"].runtime else space.code_changes).append(dimension)
    if modules & {"PNETCDF_FILE", "PNETCDF_VAR"}:
        (space.knobs if NAMESPACES["netcdf"].runtime else space.code_changes).append(
            Dimension("netcdf.fill", ["off"], "netCDF files: fill values written before the data"))
    return space


def add_recommended(space: Space, settings: list) -> None:
    """Add to the default space's knobs the values the diagnosis' recommendations set (`settings`:
    [({knob: value text}, expected saving)]), read as `iolens run --set` reads them, so that tune can try
    them first; knobs not in the space are left out."""
    dims = {k.name: k for k in space.knobs}
    for names, _ in settings:
        for name, text in names.items():
            dim = dims.get(name)
            if dim is None or any(value_text(v) == text for v in dim.values):
                continue
            value = _recommended_value(name, text, dim)
            if value is None:
                continue
            dim.values.append(value)
            if dim.numeric:
                dim.values.sort()


def _recommended_value(name: str, text: str, dim: Dimension):
    """A recommended value in the type of the dimension's values (a number where they are numbers)."""
    if dim.numeric:
        try:
            return int(text) if float(text).is_integer() else float(text)
        except ValueError:
            try:
                return _reader(name, "recommendation")(text)
            except SpaceError:
                return None
    return text


def hdf5_knobs(log, measures: dict) -> list:
    """The HDF5 knobs of a log that shows HDF5, scaled to the job: alignment around the stripe size and the
    request size seen, collective or independent transfer by what the H5D operations did, and collective
    metadata both ways (the application's own setting can be the slow part)."""
    stripe = _stripe_size(log)
    request = _common_access_size(log)
    coll = sum(measures.get(f"collective_{op}s") or 0 for op in ("write", "read"))
    transfer = ["collective", "independent"] if not coll else ["independent", "collective"]
    return [Dimension("hdf5.alignment", suggest("hdf5.alignment", stripe_size=stripe, request_size=request),
                      "HDF5 file: objects aligned to the stripe or request size"),
            Dimension("hdf5.transfer", transfer, "H5Dwrite/H5Dread through collective or independent MPI-IO"),
            Dimension("hdf5.coll_metadata", ["on", "off"], "HDF5 metadata reads and writes collective or not")]


def _common_access_size(log) -> int | None:
    """Darshan's most common POSIX access size over the log's records (POSIX_ACCESS1_ACCESS), if recorded."""
    posix = log.counters.get("POSIX")
    if posix is None or not len(posix) or "POSIX_ACCESS1_ACCESS" not in posix.columns:
        return None
    top = posix.sort("POSIX_ACCESS1_COUNT", descending=True)["POSIX_ACCESS1_ACCESS"][0]
    return int(top) if top and top > 0 else None


def _stripe_size(log) -> int | None:
    """The largest stripe size of the job's Lustre layouts, as `_max_osts` reads them (None off Lustre)."""
    size = None if log.lustre.is_empty() else log.lustre["stripe_size"].max()
    return int(size) if size else None


def _powers_of_two(top: int) -> list:
    out = [1 << k for k in range(0, max(1, int(top)).bit_length()) if 1 << k <= top]
    return out + ([int(top)] if top not in out else [])


def _by_diagnosis(knobs: list, insights: list) -> list:
    """Knobs a recommendation names first (in the diagnosis' order), the rest as found."""
    text = [" ".join(f"{r.title} {r.detail} {r.snippet}" for r in i.recommendations) for i in insights]

    def rank(dimension):
        return next((n for n, t in enumerate(text) if dimension.key in t), len(text))
    return sorted(knobs, key=rank)


def _hosts(log) -> int:
    if not log.has_dxt or log.dxt_records.is_empty():
        return 1
    return int(log.dxt_records["hostname"].n_unique())


def _on_lustre(log) -> bool:
    return (not log.lustre.is_empty()) or bool((log.files["fs_type"] == "lustre").any())


def _max_osts(log) -> int:
    """Stripe counts worth trying: up to the OSTs the job's files were seen on (64 when unknown)."""
    if log.lustre.is_empty():
        return 64
    seen = {o for osts in log.lustre["osts"].to_list() if osts for o in osts}
    return max(len(seen), int(log.lustre["stripe_count"].max() or 1), 1)
