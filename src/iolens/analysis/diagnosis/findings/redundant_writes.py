"""REDUNDANT_WRITES: bytes written far exceed the extent of the files written (rewrites).

The rule and its features are REDUNDANT_READS' in the other direction (`_redundancy`).
"""
from __future__ import annotations

from functools import partial

from ..finding import Finding
from ..insight import Recommendation
from ..savings import traffic
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


FINDING = Finding(
    code=CODE,
    meaning="Bytes written far exceed the extent of the files written.",
    key_metrics=("excess_bytes",),
    reads=("redundant_ratio", "redundant_min_bytes"),
    trigger="per file, bytes written at the POSIX layer are at least `redundant_ratio` × the extent — the union "
            "of the byte ranges touched (DXT, exact) or the highest offset + 1 (counters, a lower bound) — and "
            "the excess is at least `redundant_min_bytes`.",
    source="dxt / counters",
    report=report,
    saving=traffic("busiest_rank_redundant_time_s"),
    saving_rule=partial(_redundancy.saving_rule, OP),
    features=partial(_redundancy.features, op=OP), dtypes=partial(_redundancy.dtypes, OP),
    rule=partial(_redundancy.rule, OP), measure=partial(_redundancy.measure, op=OP),
    title=lambda v, th: _redundancy.title(OP, v), stale=partial(_redundancy.stale, OP),
)
