"""What the training-loop findings share (DATALOADER_STALL, CHECKPOINT_STALL, EPOCH_REREAD): the loop of a
trace with spans (`Context.loop`, analysis/loop.py), how they judge a stake of the loop's time, and how they
word the loop's processes and their savings.

Their savings are seconds of the loop's wall time on this run (what the loop would stop waiting for), set on each
recommendation with the arithmetic that gave them (`saving` = its_own)."""
from __future__ import annotations

import polars as pl

from ..savings import its_own
from ..units import fmt_time

SAVING = its_own("seconds of the training loop's time on this run (its spans): what the loop would stop waiting "
                 "for, each recommendation's own arithmetic from the trace")


def severity(ctx, stake: float, share: float, need: float) -> str | None:
    """None when `share` of the loop's time is below `need`; else a warning when the share is structural
    (`strong_share`) or the seconds matter for the run (`Context.matters`), else info."""
    if share < need or stake <= 0:
        return None
    return "warning" if share >= ctx.th.strong_share or ctx.matters(stake) else "info"


def loop_who(ctx, loop) -> str:
    """'main pid 4722', or 'processes main pid 1, main pid 2' for several loops."""
    return ctx.rank_labels(loop.ranks)


def with_saving(rec, seconds: float, basis: str):
    """`rec` with its expected saving (seconds of the loop's time) and how it was found."""
    rec.expected_saving, rec.saving_basis = max(float(seconds), 0.0), basis
    return rec


def seconds(x: float) -> str:
    return fmt_time(x)


def per_call_cost(calls: pl.DataFrame, time: float | None = None) -> float:
    """One call's fixed cost (s) as the trace shows it: the time spent in `calls` (`time`: the time spent
    issuing them, the program's own work between them included; else the calls' own durations) less what their
    bytes take at the fastest rate one call moved them (memory speed), per call."""
    if calls.is_empty():
        return 0.0
    dur = calls["end"] - calls["start"]
    total = float(dur.sum()) if time is None else float(time)
    moved = calls["bytes"].cast(pl.Float64)
    rates = (moved / dur).filter((dur > 0) & (moved > 0))
    transfer = float(moved.sum()) / float(rates.max()) if rates.len() else 0.0
    return max(total - transfer, 0.0) / calls.height
