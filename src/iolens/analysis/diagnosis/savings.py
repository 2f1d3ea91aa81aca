"""What each recommendation should save: seconds of the slowest rank's I/O time on this run.

`iolens tune` records this expectation next to what it measures, so it is about this run on this machine (the
measure compare and tune judge by), not the projection at scale. Each rule starts from the time the insight
says is at stake on the busiest rank and removes what the fix removes, per the cost model (costmodel.py):

* request-shape fixes (aggregate small requests, collective I/O, sequential or aligned access) keep the bytes
  and remove the per-request cost: stake × the request-latency share of one request at its size;
* fixes that remove traffic (re-reads, read-modify-write) save all of its time;
* balance fixes save the busiest rank's excess over the mean (imbalance) or the time others wait (serial);
* the rest is an upper bound (all of the time at stake) or not estimated (None) when the log has no time for
  it (striping, OSTs) or the fix is not about speed (a truncated trace, conflicts).

A check may set its own (MPIIO_OVERHEAD does); `attach` only fills recommendations that have none.
"""
from __future__ import annotations

from .costmodel import profile
from .units import fmt_bytes, fmt_pct, fmt_time

# code -> (stake metric, layer, op metrics (first present decides the op), size metrics)
LATENCY_RULES = {
    "SMALL_IO": ("busiest_rank_small_request_time_s", "posix", (), ("smallest_write_bytes", "smallest_read_bytes",
                                                                    "largest_small_write_bytes",
                                                                    "largest_small_read_bytes")),
    "RANDOM_ACCESS": ("busiest_rank_random_time_s", "posix", ("random_reads", "random_writes"),
                      ("median_request_bytes",)),
    "NO_COLLECTIVE_IO": ("busiest_rank_independent_time_s", "mpiio", ("independent_writes", "independent_reads"),
                         ("median_request_bytes",)),
    "MISALIGNED_IO": ("busiest_rank_misaligned_time_s", "posix", (), (("misaligned_bytes", "misaligned_requests"),)),
}
# code -> (metric, what the fix saves of it)
TRAFFIC_RULES = {
    "REDUNDANT_READS": "busiest_rank_redundant_time_s",
    "REDUNDANT_WRITES": "busiest_rank_redundant_time_s",
    "DATA_SIEVING": "busiest_rank_unrequested_read_time_s",
}
UPPER_BOUNDS = {
    "STRAGGLER": "max_delay_s",
    "METADATA_HEAVY": "max_rank_metadata_time_s",
    "HDF5_METADATA": "busiest_rank_metadata_write_time_s",
    "STDIO_HEAVY": "max_rank_stdio_time_s",
}
NOT_SPEED = {"TRUNCATED_TRACE": "not a speed fix: it makes the trace complete",
             "CONFLICT": "not a speed fix: it is about correctness",
             "CHECK_FAILED": "not a speed fix", "COLLECTIVE_IO": "informative: nothing to fix"}


def expected_saving(ctx, insight) -> tuple:
    """(seconds or None, how it was derived) for the recommendations of `insight`."""
    m = insight.evidence.metrics
    code = insight.code
    if code in NOT_SPEED:
        return None, NOT_SPEED[code]
    if code in LATENCY_RULES and LATENCY_RULES[code][0] in m:
        return _latency_saving(ctx, m, *LATENCY_RULES[code])
    if code in TRAFFIC_RULES and TRAFFIC_RULES[code] in m:
        t = float(m[TRAFFIC_RULES[code]])
        return t, f"all of the busiest rank's time in the extra traffic ({fmt_time(t)}): the fix removes it"
    if code == "RANK_IMBALANCE" and "excess_time_s" in m:
        t = float(m["excess_time_s"])
        return t, f"the busiest rank's I/O time above the mean rank's ({fmt_time(t)}): balanced, it is gone"
    if code == "SERIALIZED_IO" and "serial_time_s" in m:
        t = float(m["serial_time_s"]) * (1 - 1 / ctx.nprocs)
        return t, (f"the time one rank does I/O alone ({fmt_time(float(m['serial_time_s']))}) less its "
                   f"1/{ctx.nprocs} share once every rank writes its part")
    if code in UPPER_BOUNDS and UPPER_BOUNDS[code] in m:
        t = float(m[UPPER_BOUNDS[code]])
        return t, f"an upper bound: all of the time at stake ({UPPER_BOUNDS[code]} = {fmt_time(t)})"
    return None, "not estimated: the log holds no time this fix would remove (measure it, e.g. with iolens tune)"


def _latency_saving(ctx, m: dict, stake_key: str, layer: str, op_keys: tuple, size_keys: tuple) -> tuple:
    stake = float(m[stake_key])
    op = next((("read" if "read" in k else "write") for k in op_keys if k in m), None)
    # a size metric, or (bytes, requests): their mean
    sizes = [float(m[k]) if isinstance(k, str) else float(m[k[0]]) / float(m[k[1]])
             for k in size_keys if (m.get(k) if isinstance(k, str) else m.get(k[0]) and m.get(k[1]))]
    size = (min(sizes) * max(sizes)) ** 0.5 if sizes else float(ctx.th.small_request_bytes) / 2
    fs = profile(ctx, layer, op)
    share = fs.latency_share(size)
    return stake * share, (f"the busiest rank's time in these requests ({fmt_time(stake)}) × the per-request "
                           f"latency share of a {fmt_bytes(size)} request ({fmt_pct(share)}; {fs.constants()}): "
                           "the fix keeps the bytes and removes the per-request cost")


def attach(ctx, found: list) -> None:
    """Give every recommendation without its own the saving its insight expects."""
    for insight in found:
        todo = [r for r in insight.recommendations if r.expected_saving is None and not r.saving_basis]
        if not todo:
            continue
        seconds, basis = expected_saving(ctx, insight)
        for r in todo:
            r.expected_saving, r.saving_basis = seconds, basis
