"""The empirical performance model of the tuned run: m(x; β) = Σ β_k φ_k(x), fitted by least squares.

After Behzad, Byna, Wild, Prabhat and Snir (HPDC 2014, Cluster 2015): the basis functions are terms of the
configuration x and of the baseline's log — per knob, log2 of a numeric value and its square (an optimum
inside the range) or one indicator per categorical value; and, where the space has them, the physical
terms of the two-phase / striping model with f the bytes the job moves, a the aggregators (cb_nodes),
b the collective buffer, c the stripe count and s the stripe size: f/a, f/(a·b), a/c, a/s, c·s/a, c·f/a.
The model is fitted to log(objective) (knob effects multiply), with a small ridge so that it can be fitted
from a few trials, and predicts every configuration of the grid (or of its sample) in one matrix product.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

RIDGE = 1e-2  # relative to the mean squared column norm: keeps few-trial fits finite, barely biases the rest
# The physical terms, in the log space the model is fitted in: a ratio such as f/a is already the sum of
# its knobs' log terms, so what the two-phase / striping model adds are its bends and couplings — the
# rounds of two-phase I/O (one at least), aggregators beyond the stripe count (contention on a stripe)
# and stripes beyond the aggregators, and the couplings of aggregators and stripes with the stripe size.
# name -> (knobs it needs, function of the log2 values: f the bytes and r the mean request of the
# baseline's log, and the knobs by key); bounded on the grid, unlike the raw ratios
PHYSICAL = {
    "rounds: max(0, log2 f/(a*b))": (("cb_nodes", "cb_buffer_size"),
                                     lambda v: np.maximum(0, v["f"] - v["cb_nodes"] - v["cb_buffer_size"])),
    "max(0, log2 a/c)": (("cb_nodes", "striping_factor"),
                         lambda v: np.maximum(0, v["cb_nodes"] - v["striping_factor"])),
    "max(0, log2 c/a)": (("cb_nodes", "striping_factor"),
                         lambda v: np.maximum(0, v["striping_factor"] - v["cb_nodes"])),
    "log2 a * log2 s": (("cb_nodes", "striping_unit"), lambda v: v["cb_nodes"] * v["striping_unit"]),
    "log2 c * log2 s": (("striping_factor", "striping_unit"), lambda v: v["striping_factor"] * v["striping_unit"]),
    # a request larger than the buffer that carries it is cut into several
    "max(0, log2 r/b)": (("cb_buffer_size",), lambda v: np.maximum(0, v["r"] - v["cb_buffer_size"])),
    "max(0, log2 r/ind_wr)": (("ind_wr_buffer_size",), lambda v: np.maximum(0, v["r"] - v["ind_wr_buffer_size"])),
    "max(0, log2 r/ind_rd)": (("ind_rd_buffer_size",), lambda v: np.maximum(0, v["r"] - v["ind_rd_buffer_size"])),
}


def min_trials(space) -> int:
    """Finished trials needed before the model steers (the library's sampler runs until then)."""
    return max(3, len(space.knobs) + 1)


@dataclass
class Basis:
    """The feature tables of a space: per knob, value index -> its columns; then the physical terms."""
    names: list = field(default_factory=list)
    tables: list = field(default_factory=list)  # per knob: array (values × its columns)
    physical: list = field(default_factory=list)  # [(name, [knob positions], function)]
    bytes_moved: float = 0.0
    request_size: float = 0.0

    @classmethod
    def of(cls, space, bytes_moved: float = 0.0, request_size: float = 0.0) -> "Basis":
        """`bytes_moved`, `request_size`: the baseline's bytes and mean request at the file system."""
        basis = cls(bytes_moved=float(bytes_moved) or 1.0, request_size=float(request_size) or 1.0)
        for knob in space.knobs:
            cols, names = _knob_columns(knob)
            basis.tables.append(cols)
            basis.names += names
        keys = {k.key: j for j, k in enumerate(space.knobs)
                if k.namespace == "romio" and k.numeric and all(v > 0 for v in k.values)}
        for name, (needs, fn) in PHYSICAL.items():
            if all(n in keys for n in needs):
                basis.physical.append((name, [keys[n] for n in needs], fn))
                basis.names.append(name)
        basis.log2 = {p: np.log2(np.asarray(space.knobs[p].values, dtype=float))
                      for _, positions, _ in basis.physical for p in positions}
        basis.keys = {j: k.key for j, k in enumerate(space.knobs)}
        return basis

    def matrix(self, idx: np.ndarray) -> np.ndarray:
        """Features (configurations × columns) of value indices (configurations × knobs), intercept first."""
        idx = np.asarray(idx).reshape(-1, len(self.tables))
        parts = [np.ones((len(idx), 1))] + [t[idx[:, j]] for j, t in enumerate(self.tables)]
        logs = {p: table[idx[:, p]] for p, table in self.log2.items()}
        for _, positions, fn in self.physical:
            v = {self.keys[p]: logs[p] for p in positions}
            v.update(f=math.log2(self.bytes_moved), r=math.log2(self.request_size))
            parts.append(np.broadcast_to(fn(v), (len(idx),))[:, None])
        return np.concatenate(parts, axis=1)


def _knob_columns(knob) -> tuple:
    n = len(knob.values)
    if knob.numeric and all(v > 0 for v in knob.values):
        z = np.log2(np.asarray(knob.values, dtype=float))
        z = z - z.mean()
        if n >= 3:
            return np.stack([z, z * z - (z * z).mean()], axis=1), [f"log2 {knob.name}", f"(log2 {knob.name})²"]
        return z[:, None], [f"log2 {knob.name}"]
    eye = np.eye(n)[:, 1:]  # the first value is the reference level
    return eye, [f"{knob.name}={v}" for v in knob.values[1:]]


@dataclass
class Fit:
    names: list
    coefficients: np.ndarray  # β of the standardised columns, mapped back to the raw columns
    trials: int
    rms_error: float  # in log(objective): the spread the model leaves
    lo: np.ndarray = None  # the columns' range over the fitted runs: ratios of knobs (f/a, c·s/a) can be
    hi: np.ndarray = None  # orders of magnitude beyond it in an untried corner; held at its edge there

    def predict(self, X: np.ndarray) -> np.ndarray:
        held = np.flatnonzero(np.isfinite(self.lo)) if self.lo is not None else []
        if len(held):
            X = X.copy()
            X[:, held] = np.clip(X[:, held], self.lo[held], self.hi[held])
        return np.exp(np.clip(X @ self.coefficients, -50, 50))

    def to_dict(self) -> dict:
        return {"basis": ["1", *self.names], "coefficients": [float(c) for c in self.coefficients],
                "trials": self.trials, "rms_error_log": self.rms_error,
                "target": "log(objective seconds)"}


def fit(basis: Basis, idx: np.ndarray, objective: np.ndarray) -> Fit:
    """Least squares (ridge) of log(objective) on the basis of the tried configurations."""
    X = basis.matrix(idx)
    y = np.log(np.maximum(np.asarray(objective, dtype=float), 1e-9))
    n_phys = len(basis.physical)
    if n_phys and len(y) < 2 * X.shape[1]:
        # the physical terms are ratios of the knobs the per-knob terms already hold: with few runs they
        # only fit the noise and extrapolate it to the corners of the grid, so they wait for enough runs
        X = X.copy()
        X[:, X.shape[1] - n_phys:] = 0.0
    scale = np.abs(X).max(axis=0)
    scale[scale == 0] = 1.0
    Xs = X / scale
    penalty = RIDGE * max(float((Xs[:, 1:] ** 2).sum(axis=0).mean()), 1.0) if Xs.shape[1] > 1 else 0.0
    reg = np.eye(Xs.shape[1]) * penalty
    reg[0, 0] = 0.0  # the intercept is not shrunk
    beta = np.linalg.solve(Xs.T @ Xs + reg, Xs.T @ y)
    resid = y - Xs @ beta
    lo, hi = X.min(axis=0), X.max(axis=0)
    lo[:len(X[0]) - len(basis.physical)] = -np.inf  # only the physical terms are held (knob columns are bounded)
    hi[:len(X[0]) - len(basis.physical)] = np.inf
    return Fit(basis.names, beta / scale, len(y), float(math.sqrt(float((resid ** 2).mean()))) if len(y) else 0.0,
               lo, hi)


def untried_mask(grid: np.ndarray, dims: list, tried: set) -> np.ndarray:
    """Rows of `grid` not run yet (configurations compared by their linear index in the full grid)."""
    if not tried:
        return np.ones(len(grid), dtype=bool)
    if math.prod(dims) < 2 ** 62:
        lin = np.ravel_multi_index(grid.T, dims)
        done = np.ravel_multi_index(np.asarray(sorted(tried)).T, dims)
        return ~np.isin(lin, done)
    return np.array([tuple(int(v) for v in row) not in tried for row in grid])


def choose(fitted: Fit, basis: Basis, grid: np.ndarray, dims: list, tried: set, best_measured: float,
           features: np.ndarray | None = None) -> tuple:
    """(value indices, predicted objective, how) of the next configuration, or (None, None, None).

    The best predicted untried configuration, unless the model promises nothing beyond the best run so far
    (by more than its own residual spread): then the best predicted among those with the most knob values
    no run has tried yet, so that a value the data says nothing about is not ruled out by a flat model."""
    pred = fitted.predict(basis.matrix(grid) if features is None else features)
    open_ = untried_mask(grid, dims, tried)
    if not open_.any():
        return None, None, None
    masked = np.where(open_, pred, np.inf)
    i = int(np.argmin(masked))
    promise = best_measured * math.exp(-max(fitted.rms_error, 0.05))
    if not (pred[i] < promise) and tried:
        done = np.asarray(sorted(tried))
        novelty = np.zeros(len(grid), dtype=np.int32)
        for j in range(grid.shape[1]):
            novelty += ~np.isin(grid[:, j], np.unique(done[:, j]))
        novelty = np.where(open_, novelty, -1)
        if novelty.max() > 0:
            i = int(np.argmin(np.where(novelty == novelty.max(), pred, np.inf)))
            return [int(v) for v in grid[i]], float(pred[i]), "model (exploring untried values)"
    return [int(v) for v in grid[i]], float(pred[i]), "model"
