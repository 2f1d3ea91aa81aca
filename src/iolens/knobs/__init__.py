"""Run-time knobs: the one namespace `iolens run --set` and tune use (`romio.*`, `hdf5.*`, `netcdf.fill`,
`env.*`), knob files, and the preloaded knob layer that applies HDF5 and netCDF settings to an unchanged
application. At the edge, beside `collect/`: it knows processes and environments, never the log format."""
from .files import knob_file_text, read_knob_file
from .registry import FIXED, KnobError, Knob, check_settings, format_size, knob, parse_setting, show, suggest

__all__ = ["FIXED", "Knob", "KnobError", "check_settings", "format_size", "knob", "knob_file_text", "parse_setting",
           "read_knob_file", "show", "suggest"]
