"""Packing numeric columns for the page: byte-shuffled, deflated, base64; and JSON that is safe in HTML.

The page decodes a blob with `DecompressionStream('deflate')` and un-shuffles each column into a typed
array. Shuffling (byte plane by byte plane, as Blosc does) lets deflate see the mostly-zero high bytes
of small integers as long runs.
"""
from __future__ import annotations

import base64
import json
import math
import zlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np

DTYPES = {"u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "i32": np.int32, "f32": np.float32,
          "f64": np.float64}
ALIGN = 8


def smallest_uint(max_value: int) -> str:
    return "u8" if max_value < 2**8 else "u16" if max_value < 2**16 else "u32" if max_value < 2**32 else "f64"


def shuffle(arr: np.ndarray) -> bytes:
    """Byte planes of a little-endian array: all first bytes, then all second bytes, ..."""
    a = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"), copy=False))
    if a.itemsize == 1:
        return a.tobytes()
    return a.view(np.uint8).reshape(-1, a.itemsize).T.tobytes()


class Blob:
    """Named columns packed into compressed buffers, one per part; `columns` tells the page where each is.

    Parts are decoded separately by the page: the small "head" part (overview, per-rank arrays, heatmaps)
    first, so something is drawn at once, then the "trace" part with every operation."""

    def __init__(self):
        self.parts = {}

    def add(self, name: str, values, dtype: str, part: str = "head") -> None:
        columns, pieces, size = self.parts.setdefault(part, ([], [], [0]))
        arr = np.asarray(values).astype(DTYPES[dtype], copy=False)
        pad = (-size[0]) % ALIGN
        if pad:
            pieces.append(b"\0" * pad)
            size[0] += pad
        columns.append({"name": name, "dtype": dtype, "offset": size[0], "count": int(arr.size)})
        data = shuffle(arr)
        pieces.append(data)
        size[0] += len(data)

    def encode(self, level: int = 6, compress: bool = True) -> dict:
        """part -> {'columns': [...], 'chunks': [base64 of an independent zlib stream, ...], 'raw_bytes': n,
        'encoding': 'deflate'}; with `compress` False the chunks are the raw bytes in base64 ('encoding': 'none',
        which the page decodes synchronously).

        Each buffer is split into chunks compressed on two threads (zlib releases the GIL)."""
        out = {}
        with ThreadPoolExecutor(max_workers=2) as pool:
            for part, (columns, pieces, _) in self.parts.items():
                raw = b"".join(pieces)
                chunk = max(1 << 20, math.ceil(len(raw) / 8))
                blocks = [raw[i:i + chunk] for i in range(0, len(raw), chunk)] or [b""]
                packed = list(pool.map(lambda p: zlib.compress(p, level), blocks)) if compress else blocks
                out[part] = {"columns": columns, "raw_bytes": len(raw), "encoding": "deflate" if compress else "none",
                             "chunks": [base64.b64encode(p).decode("ascii") for p in packed]}
        return out


_HTML_UNSAFE = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028",
                0x2029: "\\u2029"}


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating,)):
        return _finite(float(value))
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, (set, tuple)):
        return list(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def _finite(x: float):
    return x if math.isfinite(x) else None


def _scrub(value):
    """NaN/inf -> null (JSON has no such numbers)."""
    if isinstance(value, float):
        return _finite(value)
    if isinstance(value, dict):
        return {str(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    return value


def script_json(data) -> str:
    """JSON for a <script type="application/json"> element: no '<', '>', '&' can end or open a tag."""
    text = json.dumps(_scrub(data), default=_plain, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)
    return text.translate(_HTML_UNSAFE)
