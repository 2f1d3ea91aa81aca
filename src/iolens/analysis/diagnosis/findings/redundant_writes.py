"""REDUNDANT_WRITES: bytes written far exceed the extent of the files written (rewrites).

The rule and its features are REDUNDANT_READS' in the other direction (`_redundancy`).
"""
from __future__ import annotations

from ..insight import Recommendation
from . import _advice as advice, _redundancy

CODE, OP = "REDUNDANT_WRITES", "write"


def recommendations(ctx, fids) -> list:
    """No fill values (the library's, or HDF5's/NetCDF's when the file is neither), and writing once."""
    kinds = ctx.kinds(fids[:20])
    recs = []
    if kinds & {"netcdf", "pnetcdf"} or not kinds & {"hdf5"}:
        recs.append(advice.netcdf_no_fill())
    if "hdf5" in kinds or not kinds & {"netcdf", "pnetcdf"}:
        recs.append(advice.hdf5_no_fill())
    if not kinds & {"hdf5", "netcdf", "pnetcdf"}:
        recs[0].detail = "If a NetCDF library writes fill values first: " + recs[0].detail
        recs[-1].detail = "If HDF5 pre-fills datasets: " + recs[-1].detail
    recs.append(Recommendation(
        "Write each region once", "Rewriting the same bytes (fill then data, repeated checkpoints into "
        "the same region, header rewrites) doubles the traffic; compute the final content before "
        "writing it.", "", "text", fix="overwrite"))
    return recs


def report(ctx, v) -> list:
    return _redundancy.report(ctx, v, OP, recommendations)


FINDING = _redundancy.finding(CODE, OP, "Bytes written far exceed the extent of the files written.", report)
