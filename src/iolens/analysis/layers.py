"""Which counters stand for bytes, operations and time in each I/O layer (defined in `model.darshan`)."""
from __future__ import annotations

from ..model.darshan import LAYER_BY_MODULE, LAYERS, Layer
from .measures import recorded

__all__ = ["LAYERS", "LAYER_BY_MODULE", "Layer", "recorded"]
