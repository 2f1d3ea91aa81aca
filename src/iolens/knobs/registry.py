"""The one knob namespace of `iolens run --set` (and of tune): every knob's kind, unit, parser, validation and
the values worth trying.

A knob name is `layer.name`: `romio.<any ROMIO hint>`, `hdf5.<property>`, `netcdf.fill`, `env.<VARIABLE>`.
Values are parsed into one canonical form (sizes in bytes, switches "on"/"off", choices by name), which the
knob layer, the run's `.run.json` and tune's `best.toml` all use.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..units import GiB, KiB, MiB, UnitError, format_size, parse_size

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HINT_NAME = re.compile(r"^[A-Za-z0-9_]+$")
SWITCH_WORDS = {"on": "on", "off": "off", "1": "on", "0": "off", "true": "on", "false": "off",
                "enable": "on", "disable": "off", "yes": "on", "no": "off"}


class KnobError(ValueError):
    """One line saying what is wrong with a knob setting."""


@dataclass(frozen=True)
class Knob:
    name: str
    kind: str  # "size" | "switch" | "choice" | "text"
    call: str  # what it sets, in the library's own words
    help: str
    unit: str = ""  # "bytes" for sizes
    choices: tuple = ()  # canonical words of a choice (and their code for the knob layer)
    codes: dict = field(default_factory=dict)  # canonical value -> the layer's integer code
    minimum: int = 0
    domain: tuple = ()  # values worth trying (suggest() scales some of them to the job)

    @property
    def layer(self) -> str:
        return self.name.split(".", 1)[0]

    def parse(self, value):
        """The canonical value, or KnobError with one line saying why not."""
        if self.kind == "size":
            try:
                size = parse_size(value)  # binary multiples: 64k = 64kb = 64KiB (iolens.units)
            except UnitError as exc:
                raise KnobError(str(exc)) from None
            if size < self.minimum:
                raise KnobError(f"must be at least {format_size(self.minimum)}")
            return size
        text = str(value).strip() if not isinstance(value, bool) else ("on" if value else "off")
        if self.kind == "switch":
            word = SWITCH_WORDS.get(text.lower())
            if word is None:
                raise KnobError("expected on or off")
            return word
        if self.kind == "choice":
            if text.lower() not in self.choices:
                raise KnobError("expected one of " + ", ".join(self.choices))
            return text.lower()
        if not text or "\n" in text:
            raise KnobError("expected a one-line value")
        return text

    def show(self, value) -> str:
        """The value as a user writes it."""
        return format_size(value) if self.kind == "size" else str(value)

    def code(self, value) -> str:
        """The value as the knob layer (IOLENS_KNOBS) reads it."""
        if self.kind == "size":
            return str(value)
        if self.kind == "switch":
            return "1" if value == "on" else "0"
        if self.codes:
            return str(self.codes[value])
        return str(value)


_SIZES_64K_16M = tuple(KiB << s for s in range(6, 15, 2))  # 64 KiB .. 16 MiB
HDF5_KNOBS = {k.name: k for k in (
    Knob("hdf5.alignment", "size", "H5Pset_alignment(fapl, threshold, alignment)",
         "Objects of at least the threshold start on a multiple of this (a file-system block / Lustre stripe).",
         "bytes", minimum=1, domain=_SIZES_64K_16M),
    Knob("hdf5.alignment_threshold", "size", "H5Pset_alignment(fapl, threshold, alignment)",
         "Only objects at least this large are aligned [default: 64KiB, or the alignment if smaller].",
         "bytes", domain=(0, 64 * KiB, MiB)),
    Knob("hdf5.meta_block_size", "size", "H5Pset_meta_block_size(fapl, size)",
         "Metadata is allocated in blocks of this size (HDF5's default: 2KiB).", "bytes", minimum=1,
         domain=(2 * KiB, 64 * KiB, MiB, 4 * MiB)),
    Knob("hdf5.sieve_buf_size", "size", "H5Pset_sieve_buf_size(fapl, size)",
         "The data-sieving buffer for contiguous datasets (HDF5's default: 64KiB).", "bytes",
         domain=(64 * KiB, 256 * KiB, MiB, 4 * MiB)),
    Knob("hdf5.coll_metadata", "switch",
         "H5Pset_all_coll_metadata_ops(fapl, on) and H5Pset_coll_metadata_write(fapl, on)",
         "Collective metadata reads and writes (parallel HDF5); off turns off what the application set.",
         domain=("on", "off")),
    Knob("hdf5.mdc_flush", "choice", "H5Pset_mdc_config(fapl, ...)",
         "deferred: the metadata cache evicts (writes) nothing until flush or close; default: HDF5's own "
         "cache settings, undoing the application's.", choices=("deferred", "default"),
         codes={"deferred": 1, "default": 0}, domain=("deferred", "default")),
    Knob("hdf5.evict_on_close", "switch", "H5Pset_evict_on_close(fapl, on)",
         "Evict an object's metadata from the cache when it is closed (HDF5 >= 1.10.1; serial files).",
         domain=("on", "off")),
    Knob("hdf5.transfer", "choice", "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE | H5FD_MPIO_INDEPENDENT)",
         "Raw-data transfers of H5Dwrite/H5Dread on MPI-IO files: collective or independent MPI-IO.",
         choices=("collective", "independent"), codes={"collective": 1, "independent": 0},
         domain=("collective", "independent")),
    Knob("hdf5.chunk_cache", "size", "H5Pset_chunk_cache(dapl, default slots, size, default w0)",
         "The chunk cache of each chunked dataset opened or created (HDF5's default: 1MiB).", "bytes",
         domain=(MiB, 16 * MiB, 64 * MiB, 256 * MiB)),
    Knob("hdf5.fill_time", "choice", "H5Pset_fill_time(dcpl, H5D_FILL_TIME_...)",
         "When fill values are written into new datasets: never skips them (every element must be written).",
         choices=("never", "ifset", "alloc"), codes={"alloc": 0, "never": 1, "ifset": 2},
         domain=("never", "ifset")),
)}
NETCDF_KNOBS = {k.name: k for k in (
    Knob("netcdf.fill", "switch", "nc_set_fill / ncmpi_set_fill(ncid, NC_NOFILL | NC_FILL) after create",
         "Fill mode of the files the application creates (netCDF, netCDF-4, PnetCDF).", domain=("off", "on")),
)}
FIXED = {**HDF5_KNOBS, **NETCDF_KNOBS}
# the knob layer (a preloaded library) applies these; romio.* and env.* are set by `iolens run` itself
LAYER_KNOBS = tuple(FIXED)
# ROMIO hints worth trying, as tune's default space names them; any other hint is accepted as text
ROMIO_DOMAINS = {
    "romio_cb_write": ("enable", "disable", "automatic"), "romio_cb_read": ("enable", "disable", "automatic"),
    "romio_ds_write": ("enable", "disable", "automatic"), "romio_ds_read": ("enable", "disable", "automatic"),
    "cb_buffer_size": (MiB, 4 * MiB, 16 * MiB, 64 * MiB), "romio_no_indep_rw": ("true", "false"),
    "ind_wr_buffer_size": (512 * KiB, 4 * MiB), "ind_rd_buffer_size": (4 * MiB, 16 * MiB),
    "striping_unit": (MiB, 4 * MiB, 16 * MiB),
}
# ROMIO hints that are a number of bytes: read as sizes (`64k` is 65,536), written to ROMIO as plain bytes
# (ROMIO reads a hint with atoi, so `64k` itself would reach it as 64)
ROMIO_SIZES = ("cb_buffer_size", "ind_rd_buffer_size", "ind_wr_buffer_size", "striping_unit")


def knob(name: str) -> Knob:
    """The knob of that name; romio.* and env.* are families with free-form values."""
    if name in FIXED:
        return FIXED[name]
    layer, _, rest = name.partition(".")
    if layer == "romio" and rest in ROMIO_SIZES:
        return Knob(name, "size", f'MPI_Info_set(info, "{rest}", bytes) / ROMIO_HINTS',
                    "A ROMIO hint in bytes: through ROMIO_HINTS, and for HDF5 files also their MPI_Info.",
                    "bytes", minimum=1, domain=ROMIO_DOMAINS.get(rest, ()))
    if layer == "romio" and _HINT_NAME.match(rest):
        return Knob(name, "text", f'MPI_Info_set(info, "{rest}", value) / ROMIO_HINTS',
                    "A ROMIO hint: through ROMIO_HINTS, and for HDF5 files also their MPI_Info.",
                    domain=ROMIO_DOMAINS.get(rest, ()))
    if layer == "env" and _ENV_NAME.match(rest):
        return Knob(name, "text", f"environment variable {rest}", "Set in the program's environment.")
    if layer in ("hdf5", "netcdf"):
        known = ", ".join(n for n in FIXED if n.startswith(layer + "."))
        raise KnobError(f"unknown {layer} knob (known: {known})")
    raise KnobError("unknown knob: expected romio.HINT, hdf5.PROPERTY, netcdf.fill or env.NAME")


def parse_setting(text: str) -> tuple:
    """'hdf5.alignment=1MiB' -> ('hdf5.alignment', 1048576); KnobError names the setting."""
    name, sep, value = text.partition("=")
    name = name.strip()
    try:
        if not sep or not name:
            raise KnobError("expected KNOB=VALUE")
        return name, knob(name).parse(value.strip())
    except KnobError as exc:
        raise KnobError(f"--set {text}: {exc}") from None


def check_settings(settings: dict) -> dict:
    """{name: value as given} -> {name: canonical value}; KnobError names the first bad one."""
    out = {}
    for name, value in settings.items():
        try:
            out[str(name)] = knob(str(name)).parse(value)
        except KnobError as exc:
            raise KnobError(f"{name}={value}: {exc}") from None
    return out


def show(name: str, value) -> str:
    """'hdf5.alignment=1MiB'."""
    return f"{name}={knob(name).show(value)}"


def suggest(name: str, *, ranks: int | None = None, stripe_size: int | None = None,
            request_size: int | None = None, app_value=None) -> list:
    """Values worth trying for a knob, scaled to the job where it says how (for tune's HDF5 space):
    alignments around the Lustre stripe and the dominant request size, aggregators up to the ranks, and the
    application's own setting's opposite for switches (the application's choice can be the slow part)."""
    k = knob(name)
    values = list(k.domain)
    if name in ("hdf5.alignment", "romio.striping_unit") and (stripe_size or request_size):
        for size in (stripe_size, request_size):
            if size and size >= 4 * KiB:
                values.append(1 << (int(size).bit_length() - 1))  # the power of two at or below
    if name == "romio.cb_nodes" and ranks:
        values = [n for n in (1, 2, 4, 8, 16, 32, 64, 128, 256) if n <= ranks]
        if ranks not in values:
            values.append(ranks)
    if k.kind == "switch" and app_value is not None:
        mine = k.parse(app_value)
        values = [("off" if mine == "on" else "on"), mine]
    seen, out = set(), []
    for v in values:
        v = k.parse(v) if k.kind != "text" else v
        if v not in seen:
            seen.add(v)
            out.append(v)
    return sorted(out) if k.kind == "size" else out
