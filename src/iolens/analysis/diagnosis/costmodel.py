"""A small cost model of a parallel file system: what a pattern seen on a short run would cost at scale.

A reproducer run on a fast local disk makes every pattern cheap; the same pattern on a Lustre-like file
system at 1,024 ranks is not. The model is deliberately simple (docs/diagnosis.md, "The cost model"):

* weak scaling: each of `fs_scale_ranks` ranks does what the average rank of this run did;
* every request that is small, random or otherwise not streamed pays `fs_request_latency` at a storage
  server (OST); the `fs_osts` servers of a shared file work in parallel;
* every request that shares a stripe with another rank's request (misaligned, interleaved) costs one
  extent-lock conflict, `fs_lock_latency`, serialised per OST;
* extra bytes (re-reads, read-modify-write) stream at `fs_ost_bandwidth` per OST.

It gives an order of magnitude to rank findings by, not a prediction. The values are thresholds
(`-t fs_osts=16`), or a profile file (`--fs-profile FILE`, TOML or JSON).
"""
from __future__ import annotations

from dataclasses import dataclass

from .units import fmt_count, fmt_time


@dataclass(frozen=True)
class FsProfile:
    request_latency: float
    lock_latency: float
    ost_bandwidth: float
    osts: int
    scale_ranks: int

    @classmethod
    def from_thresholds(cls, th) -> "FsProfile":
        return cls(float(th.fs_request_latency), float(th.fs_lock_latency), float(th.fs_ost_bandwidth),
                   max(int(th.fs_osts), 1), max(int(th.fs_scale_ranks), 1))

    def cost(self, ranks_here: int, requests: float = 0, lock_conflicts: float = 0, nbytes: float = 0) -> float:
        """Seconds the file system needs at `scale_ranks` for what `ranks_here` ranks did here."""
        scale = self.scale_ranks / max(int(ranks_here), 1)
        return scale * (requests * self.request_latency + lock_conflicts * self.lock_latency
                        + nbytes / self.ost_bandwidth) / self.osts


def project(ctx, metrics: dict, here_seconds: float, *, requests: float = 0, lock_conflicts: float = 0,
            nbytes: float = 0) -> str:
    """Add the projected cost to `metrics` and return the sentence that says it."""
    fs = FsProfile.from_thresholds(ctx.th)
    at_scale = fs.cost(ctx.nprocs, requests, lock_conflicts, nbytes)
    metrics["projected_time_s"] = at_scale
    metrics["projected_ranks"] = fs.scale_ranks
    here = f"≈ {fmt_time(here_seconds)}"
    if ctx.run_time > 0:
        here += f" of this {fmt_time(ctx.run_time)} run here"
    else:
        here += " here"
    return (f"Cost: {here}; ≈ {fmt_time(at_scale)} at {fmt_count(fs.scale_ranks)} ranks on a Lustre-like "
            f"file system ({fs.osts} OSTs; see the cost model in docs/diagnosis.md).")
