"""The Dask preload of a build's local workers: each worker ties its life to the build's process (workers.py)
and imports what a batch task runs (a quarter of a second) while the build still lists its logs."""
from __future__ import annotations

from . import build, insights  # noqa: F401 - imported for the tasks to come
from .workers import die_with_parent


def dask_setup(worker) -> None:  # noqa: ARG001 - Dask's preload hook
    die_with_parent()
