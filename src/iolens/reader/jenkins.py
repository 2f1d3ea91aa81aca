"""Darshan's record ids: Bob Jenkins' 64-bit hash (lookup8, public domain) of the record's name.

The runtime names each record by `darshan_core_gen_record_id(name)` = `darshan_hash(name, strlen(name), 0)`
(darshan-runtime/lib/darshan-core.c, lookup8.c): the same path gives the same id in every module and every
log. A log writer that renames records computes their ids this way, so that an id is the id Darshan itself
would have given the new name (and no id still hashes the old one).
"""
from __future__ import annotations

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C13  # the golden ratio, lookup8's arbitrary start value


def _mix(a: int, b: int, c: int) -> tuple:
    """lookup8's mix64: three 64-bit words mixed reversibly."""
    a = (a - b - c) & MASK
    a ^= c >> 43
    b = (b - c - a) & MASK
    b ^= (a << 9) & MASK
    c = (c - a - b) & MASK
    c ^= b >> 8
    a = (a - b - c) & MASK
    a ^= c >> 38
    b = (b - c - a) & MASK
    b ^= (a << 23) & MASK
    c = (c - a - b) & MASK
    c ^= b >> 5
    a = (a - b - c) & MASK
    a ^= c >> 35
    b = (b - c - a) & MASK
    b ^= (a << 49) & MASK
    c = (c - a - b) & MASK
    c ^= b >> 11
    a = (a - b - c) & MASK
    a ^= c >> 12
    b = (b - c - a) & MASK
    b ^= (a << 18) & MASK
    c = (c - a - b) & MASK
    c ^= b >> 22
    return a, b, c


def darshan_hash(key: bytes, level: int = 0) -> int:
    """The 64-bit hash of `key` (bytes read little-endian, whatever the machine: lookup8's portable hash())."""
    n = len(key)
    a = b = level & MASK
    c = GOLDEN
    pos = 0
    while n - pos >= 24:  # whole 24-byte blocks
        a = (a + int.from_bytes(key[pos:pos + 8], "little")) & MASK
        b = (b + int.from_bytes(key[pos + 8:pos + 16], "little")) & MASK
        c = (c + int.from_bytes(key[pos + 16:pos + 24], "little")) & MASK
        a, b, c = _mix(a, b, c)
        pos += 24
    tail = key[pos:]
    c = (c + n) & MASK  # the low byte of c holds the length; the tail's bytes 16..22 go above it
    a = (a + int.from_bytes(tail[:8], "little")) & MASK
    b = (b + int.from_bytes(tail[8:16], "little")) & MASK
    c = (c + (int.from_bytes(tail[16:23], "little") << 8)) & MASK
    return _mix(a, b, c)[2]


def record_id(name: bytes) -> int:
    """The id Darshan gives a record of this name."""
    return darshan_hash(name, 0)
