"""Tuning a command's runtime knobs (`iolens tune`), its study page written. Needs `iolens[tune]`."""
from __future__ import annotations

from ..tune import study as tune

__all__ = ["tune"]
