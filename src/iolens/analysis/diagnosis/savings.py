"""What each recommendation should save: seconds of the slowest rank's I/O time on this run.

`iolens tune` records this expectation next to what it measures, so it is about this run on this machine (the
measure compare and tune judge by), not the projection at scale. A finding declares how its fixes save
(`Finding.saving`), starting from the time its insight says is at stake on the busiest rank and removing what
the fix removes, per the cost model (costmodel.py):

* request-shape fixes (aggregate small requests, collective I/O, sequential or aligned access) keep the bytes
  and remove the per-request cost: stake × the request-latency share of one request at its size (`latency`);
* fixes that remove traffic (re-reads, read-modify-write) save all of its time (`traffic`);
* balance fixes save the busiest rank's excess over the mean (imbalance) or the time others wait (serial);
* the rest is an upper bound (all of the time at stake: `upper_bound`) or not estimated (None) when the log
  has no time for it (striping, OSTs) or the fix is not about speed (`not_speed`: a truncated trace,
  conflicts).

A recommendation that names the kind of change it makes (`Recommendation.fix`: collective I/O, fewer syncs,
independent HDF5 transfers, no fill, collective metadata) is priced by that change instead (fixes.py: the time
it removes at every layer it touches, less what it adds); a finding may set its own on its recommendations
(MPIIO_OVERHEAD does); `attach` only fills those that have none. A saving below zero means the change would
cost time here: the recommendation then says so in its first words ("Likely slower here: ..."), and the JSON
keeps `expected_saving` at 0 (its schema's minimum) with the cost in `saving_basis`. Such recommendations come
after the ones that help (`order_by_saving`): the least costly first, the rest in the finding's order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from . import fixes
from .common import noise_seconds
from .costmodel import profile
from .units import fmt_bytes, fmt_pct, fmt_time

NOT_ESTIMATED = "not estimated: the log holds no time this fix would remove (measure it, e.g. with iolens tune)"
NOT_ESTIMATED_DOC = "`null`: the log holds no time the fix would remove (measure it)"


@dataclass(frozen=True)
class Saving:
    """How a finding's fixes save (`Finding.saving`): `estimate(ctx, insight)` -> (seconds or None, basis), or
    None when this insight has no time for it; `doc`: what it is, for docs/diagnosis.md's table."""
    estimate: Callable
    doc: str
    speed: bool = True  # False: its fixes are not about speed (correctness, completeness)

    def __call__(self, ctx, insight):
        return self.estimate(ctx, insight)


def latency(stake: str, layer: str, ops: tuple = (), sizes: tuple = ()):
    """Aggregating, reordering or aligning keeps the bytes and removes the per-request cost of the requests
    whose busiest rank's time is metric `stake`; `ops`: metrics whose presence says the operation kind (the
    first present), `sizes`: size metrics, or (bytes, requests) pairs of metrics, their geometric mean the
    request size."""
    def saving(ctx, insight):
        m = insight.evidence.metrics
        if stake not in m:
            return None
        return _latency_saving(ctx, m, stake, layer, ops, sizes)
    return Saving(saving, "the busiest rank's time in those requests × the share of one request's cost (at their "
                          "size, cost model) that is per-request latency: the fix keeps the bytes and removes the "
                          "per-request cost")


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


def traffic(metric: str):
    """The fix removes the extra traffic whose busiest rank's time is `metric`: all of it is saved."""
    def saving(ctx, insight):
        m = insight.evidence.metrics
        if metric not in m:
            return None
        t = float(m[metric])
        return t, f"all of the busiest rank's time in the extra traffic ({fmt_time(t)}): the fix removes it"
    return Saving(saving, "all of the busiest rank's time in the extra traffic")


def upper_bound(metric: str):
    """At most all of the time at stake, metric `metric`."""
    def saving(ctx, insight):
        m = insight.evidence.metrics
        if metric not in m:
            return None
        t = float(m[metric])
        return t, f"an upper bound: all of the time at stake ({metric} = {fmt_time(t)})"
    return Saving(saving, "an upper bound: all of the time at stake (`max_delay_s`, `max_rank_metadata_time_s`, "
                          "...)")


def not_speed(reason: str):
    """The fix is not about speed: no seconds, and why."""
    return Saving(lambda ctx, insight: (None, reason), "`null`: not a speed fix", speed=False)


def its_own(doc: str):
    """The finding sets the saving on its recommendations itself (`doc`: how)."""
    return Saving(lambda ctx, insight: None, doc)


def attach(ctx, found: list, saving_of) -> None:
    """Give every recommendation without its own the saving of the change it makes (`fix_price`), else the one
    its insight expects (`saving_of(code)`: the finding's `saving`, or None)."""
    for insight in found:
        todo = [r for r in insight.recommendations if r.expected_saving is None and not r.saving_basis]
        if not todo:
            continue
        default = None
        for r in todo:
            price = fix_price(ctx, insight, r)
            if price is None:
                if default is None:
                    saving = saving_of(insight.code)
                    default = (saving(ctx, insight) if saving is not None else None) or (None, NOT_ESTIMATED)
                r.expected_saving, r.saving_basis = default
            else:
                r.expected_saving, r.saving_basis = price.seconds, price.basis
            say_if_slower(r, ctx)


def order_by_saving(found: list) -> None:
    """Each insight's recommendations that would cost time here (saving below zero) moved after the others, the
    least costly first; otherwise the finding's order is kept (a stable sort)."""
    for insight in found:
        insight.recommendations.sort(key=_slower_last)


def _slower_last(r) -> tuple:
    s = r.expected_saving
    return (0, 0.0) if s is None or s >= 0 else (1, -s)


def fix_price(ctx, insight, r):
    """The price of the change `r` makes (`r.fix`), or None: the finding's own saving applies."""
    kind, _, op = r.fix.partition(":")
    if kind == "collective":
        price = fixes.collective(ctx, op or _main_op(ctx))
    elif kind == "sync_less":
        price = fixes.sync_less(ctx)
    elif kind == "hdf5_independent":
        price = fixes.hdf5_independent(ctx)
    elif kind == "coll_metadata":
        price = fixes.coll_metadata(ctx)
    elif kind == "overwrite":
        price = fixes.overwrite(ctx)
    else:
        return None
    return price if price.seconds is not None else None


def _main_op(ctx) -> str:
    """The kind (write or read) with more independent MPI-IO requests."""
    w, r = (ctx.total("MPI-IO", f"MPIIO_INDEP_{k}") for k in ("WRITES", "READS"))
    return "read" if r > w else "write"


SLOWER = "Likely slower here: "


def say_if_slower(r, ctx) -> None:
    """A recommendation whose change would cost time here says so in its first words, and by how much (a cost
    within the noise of two identical runs: that it is not expected to save time)."""
    if r.expected_saving is None or r.expected_saving >= 0 or r.title.startswith(SLOWER):
        return
    cost = fmt_time(-r.expected_saving)
    if -r.expected_saving < noise_seconds(ctx):
        r.detail = _after_why(r.detail, f"Not expected to save time on this run (about {cost} more, within the "
                              "noise of two identical runs; see saving_basis). ")
        return
    title = r.title[:1].lower() + r.title[1:] if r.title[1:2].islower() else r.title  # "Use ..", not "HDF5: .."
    r.title = SLOWER + title
    r.detail = _after_why(r.detail, f"It would add about {cost} to the slowest rank's I/O time of this run (see "
                          "how in saving_basis); measure before adopting it. ")


def _after_why(detail: str, note: str) -> str:
    """`note` put first in `detail`, after the reason the advice may apply at all when it starts with one (fit.py's
    `If x.h5 is an HDF5 file (...): `): whether the advice applies comes before what it would save."""
    if detail.startswith("If ") and ": " in detail:
        why, rest = detail.split(": ", 1)
        return f"{why}: {note}{rest}"
    return note + detail
