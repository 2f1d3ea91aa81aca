"""How knob settings reach a process: ROMIO hints through a hints file (ROMIO_HINTS), variables through the
environment, HDF5 and netCDF knobs through the preloaded knob layer (libiolens_knobs.so, built from
native/knobs/iolens_knobs.c), which reports back what it applied; `outcome` turns that report into one
verdict per knob."""
from __future__ import annotations

from pathlib import Path

from .registry import LAYER_KNOBS, KnobError, knob

LIBRARY = Path(__file__).resolve().parent / "libiolens_knobs.so"
CONFIG_VAR = "IOLENS_KNOBS"  # "name=code" lines the knob layer reads
REPORT_VAR = "IOLENS_KNOBS_REPORT"  # where each process appends what it applied


def library() -> Path:
    if not LIBRARY.is_file():
        raise KnobError(f"the knob layer is not installed ({LIBRARY} is missing): reinstall iolens with a C "
                        "compiler on the PATH")
    return LIBRARY


def needs_layer(settings: dict) -> bool:
    """Only HDF5/netCDF knobs and ROMIO hints (for HDF5 files' MPI_Info) need the preload."""
    return any(name in LAYER_KNOBS or name.startswith("romio.") for name in settings)


DEFAULT_ALIGNMENT_THRESHOLD = 64 << 10  # align large objects only: HDF5's own threshold (1) pads every block


def layer_config(settings: dict) -> str:
    settings = dict(settings)
    if "hdf5.alignment" in settings and "hdf5.alignment_threshold" not in settings:
        settings["hdf5.alignment_threshold"] = min(settings["hdf5.alignment"], DEFAULT_ALIGNMENT_THRESHOLD)
    return "\n".join(f"{name}={knob(name).code(value)}" for name, value in settings.items()
                     if name in LAYER_KNOBS or name.startswith("romio."))


def hints_lines(settings: dict) -> list:
    """ROMIO hints file lines ('key value') for the romio.* knobs."""
    return [f"{name.split('.', 1)[1]} {value}" for name, value in settings.items() if name.startswith("romio.")]


def environment(settings: dict) -> dict:
    return {name.split(".", 1)[1]: str(value) for name, value in settings.items() if name.startswith("env.")}


def read_report(path) -> list:
    """The knob layer's report: one dict per process {pid, exe, libraries, applied: {knob: where},
    unapplied: {knob: reason}}; blocks cut short (a process killed while writing) are dropped."""
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return []
    processes, current = [], None
    for line in text.splitlines():
        kind, _, rest = line.partition("\t")
        a, _, b = rest.partition("\t")
        if kind == "process":
            current = {"pid": a, "exe": b, "libraries": {}, "applied": {}, "unapplied": {}}
        elif current is None:
            continue
        elif kind == "library":
            current["libraries"][a] = None if b == "-" else b
        elif kind in ("applied", "unapplied"):
            current[kind][a] = b
        elif kind == "end":
            processes.append(current)
            current = None
    return processes


def outcome(settings: dict, processes: list, hints_file: bool = True) -> list:
    """One record per knob: {name, value, applied, how, reason}. A layer knob is applied when some process
    of the command applied it (an MPI launcher never does); otherwise the reason comes from a process that
    loaded the library concerned, if any did."""
    out = []
    for name, value in settings.items():
        shown = knob(name).show(value)
        rec = {"name": name, "value": shown, "applied": True, "how": [], "reason": ""}
        if name.startswith("env."):
            rec["how"] = ["environment"]
        elif name.startswith("romio."):
            rec["how"] = ["ROMIO_HINTS"] if hints_file else []
            if any(name in p["applied"] for p in processes):
                rec["how"].append("MPI_Info of HDF5 files")
        else:
            where = [p["applied"][name] for p in processes if name in p["applied"]]
            if where:
                rec["how"] = sorted(set(where))
            else:
                rec["applied"] = False
                rec["reason"] = _reason(name, processes)
        out.append(rec)
    return out


def _reason(name: str, processes: list) -> str:
    if not processes:
        return "the knob layer wrote no report (the program did not start, or was killed)"
    lib = "netcdf" if name.startswith("netcdf.") else "hdf5"
    loaded = [p for p in processes if p["libraries"].get(lib)]
    for p in loaded + processes:
        if name in p["unapplied"]:
            return p["unapplied"][name]
    return "not reported by the knob layer"
