"""Protocol-buffer encoding with numpy: a million messages of one shape cost a few array operations per
field instead of a million Python objects (`encode`). Also a tiny scalar encoder for the few one-off
messages (descriptors, interned strings)."""
from __future__ import annotations

import numpy as np

VARINT, LEN = 0, 2


def tag(field: int, wire: int) -> bytes:
    return varint_bytes((field << 3) | wire)


def varint_bytes(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 -> two's complement, as protobuf does
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def field_varint(field: int, value: int) -> bytes:
    return tag(field, VARINT) + varint_bytes(value)


def field_bytes(field: int, payload) -> bytes:
    payload = payload.encode() if isinstance(payload, str) else bytes(payload)
    return tag(field, LEN) + varint_bytes(len(payload)) + payload


# --- many messages at once: a message is a list of nodes, each the same field in every row ---------------
# ("const", bytes, mask)            the same bytes in every row (e.g. a tag and a constant value)
# ("varint", values, mask)          one varint per row
# ("message", field, nodes, mask)   an embedded message: tag, length, then its nodes
# mask: None (every row) or a bool array (rows where the field is present).

def const(data: bytes, mask=None) -> tuple:
    return ("const", data, mask)


def varint_field(field: int, values: np.ndarray, mask=None) -> list:
    return [("const", tag(field, VARINT), mask), ("varint", values, mask)]


def message(field: int, nodes: list, mask=None) -> tuple:
    return ("message", field, nodes, mask)


def encode(nodes: list, rows: int) -> np.ndarray:
    """The rows' messages back to back (each row's fields in node order), as one uint8 buffer.

    Lengths are computed bottom-up first, then every byte is written once into its final place: nested
    messages cost no copies."""
    leaves, lens = _flatten(nodes, rows, None)
    lens = np.broadcast_to(lens, (rows,)).astype(np.int64)
    out = np.empty(int(lens.sum()), dtype=np.uint8)
    pos = np.cumsum(lens) - lens
    for kind, data, mask, ln in leaves:
        at = pos if mask is None else pos[mask]
        if kind == "const":
            for k, byte in enumerate(data):
                out[at + k] = byte
        else:
            _put_varints(out, at, data if mask is None else data[mask], ln if mask is None else ln[mask])
        pos += ln
    return out


def _flatten(nodes: list, rows: int, outer):
    """([(kind, data, mask, lens)] leaves in write order, bytes per row). Lens are 0 where the field is
    absent; a const leaf's lens is a plain int when it is in every row; adjacent consts are merged."""
    leaves, total = [], 0
    for node in nodes:
        mask = _both(outer, node[-1])
        if node[0] == "message":
            inner, body = _flatten(node[2], rows, mask)
            head, head_len = _flatten([("const", tag(node[1], LEN), mask),
                                       ("varint", np.broadcast_to(body, (rows,)), mask)], rows, None)
            new, size = head + inner, head_len + body
        elif node[0] == "const":
            size = len(node[1]) if mask is None else len(node[1]) * mask.astype(np.int64)
            new = [("const", node[1], mask, size)]
        else:
            v = np.ascontiguousarray(node[1]).astype(np.int64, copy=False).view(np.uint64)
            size = varint_lens(v) if mask is None else varint_lens(v) * mask
            new = [("varint", v, mask, size)]
        for leaf in new:
            last = leaves[-1] if leaves else None
            if leaf[0] == "const" and last is not None and last[0] == "const" and last[2] is leaf[2]:
                leaves[-1] = ("const", last[1] + leaf[1], leaf[2], last[3] + leaf[3])
            else:
                leaves.append(leaf)
        total = total + size
    return leaves, total


def _both(a, b):
    if a is None:
        return b
    return a if b is None else a & b


def varint_lens(v: np.ndarray) -> np.ndarray:
    lens = np.ones(len(v), dtype=np.int64)
    top = v.max() if len(v) else 0
    for k in range(1, 10):
        limit = np.uint64(1 << (7 * k))
        if top < limit:
            break
        lens += v >= limit
    return lens


def _put_varints(out: np.ndarray, at: np.ndarray, v: np.ndarray, lens: np.ndarray) -> None:
    for k in range(int(lens.max()) if len(lens) else 0):
        sel = None if k == 0 else lens > k
        byte = (v if sel is None else v[sel]) >> np.uint64(7 * k) & np.uint64(0x7F)
        more = (lens if sel is None else lens[sel]) > k + 1
        out[(at if sel is None else at[sel]) + k] = byte.astype(np.uint8) | (more.astype(np.uint8) << 7)
