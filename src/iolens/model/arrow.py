"""numpy buffers -> polars through the Arrow C data interface, for columns polars cannot take from numpy.

`pl.Series(obj)` accepts any object with `__arrow_c_array__` (the Arrow PyCapsule protocol). The C
structs are built here with ctypes around numpy buffers: a list column from (offsets, values) is then
adopted by polars without a copy, and a Categorical from (codes, categories) is re-coded by polars in
one pass, without the index copies and temporaries of a `gather`. The numpy arrays are kept alive until
polars calls the struct's release callback.
"""
from __future__ import annotations

import ctypes
import itertools
from typing import Optional

import numpy as np
import polars as pl

NULLABLE = 2  # ARROW_FLAG_NULLABLE


class ArrowSchema(ctypes.Structure):
    pass


class ArrowArray(ctypes.Structure):
    pass


_RELEASE_SCHEMA = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowSchema))
_RELEASE_ARRAY = ctypes.CFUNCTYPE(None, ctypes.POINTER(ArrowArray))
ArrowSchema._fields_ = [
    ("format", ctypes.c_char_p), ("name", ctypes.c_char_p), ("metadata", ctypes.c_void_p),
    ("flags", ctypes.c_int64), ("n_children", ctypes.c_int64),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowSchema))), ("dictionary", ctypes.POINTER(ArrowSchema)),
    ("release", _RELEASE_SCHEMA), ("private_data", ctypes.c_void_p),
]
ArrowArray._fields_ = [
    ("length", ctypes.c_int64), ("null_count", ctypes.c_int64), ("offset", ctypes.c_int64),
    ("n_buffers", ctypes.c_int64), ("n_children", ctypes.c_int64), ("buffers", ctypes.POINTER(ctypes.c_void_p)),
    ("children", ctypes.POINTER(ctypes.POINTER(ArrowArray))), ("dictionary", ctypes.POINTER(ArrowArray)),
    ("release", _RELEASE_ARRAY), ("private_data", ctypes.c_void_p),
]

_alive: dict = {}  # token -> everything a top-level struct points to, until polars releases it
_tokens = itertools.count(1)


def _release(ptr) -> None:
    """Release callback (polars may call it on its moved copy of the struct: found by private_data)."""
    try:
        _alive.pop(ptr.contents.private_data or 0, None)
        ptr.contents.release = type(ptr.contents.release)()  # NULL: released
    except Exception:  # pragma: no cover - never raise into the caller's C code
        pass


_release_schema = _RELEASE_SCHEMA(_release)
_release_array = _RELEASE_ARRAY(_release)

_capsule = ctypes.pythonapi.PyCapsule_New
_capsule.restype = ctypes.py_object
_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class _Exported:
    """What `pl.Series(...)` takes: the two capsules of one array and its type."""

    def __init__(self, schema: ArrowSchema, array: ArrowArray, keep: list):
        self.schema, self.array = schema, array
        self.tokens = []
        for struct in (schema, array):  # each top-level struct owns everything, until its release
            token = next(_tokens)
            struct.private_data = token
            _alive[token] = keep
            self.tokens.append(token)

    def __arrow_c_array__(self, requested_schema=None):
        return (_capsule(ctypes.addressof(self.schema), b"arrow_schema", None),
                _capsule(ctypes.addressof(self.array), b"arrow_array", None))

    def import_series(self) -> pl.Series:
        try:
            series = pl.Series(self)
        except BaseException:
            for token in self.tokens:  # polars did not take the structs
                _alive.pop(token, None)
            raise
        if self.schema.release:  # polars reads the type without taking it: the producer releases it
            _release(ctypes.pointer(self.schema))
        return series


def _schema(fmt: bytes, keep: list, children=(), dictionary=None) -> ArrowSchema:
    s = ArrowSchema(format=fmt, name=b"", flags=NULLABLE, n_children=len(children))
    if children:
        s.children = (ctypes.POINTER(ArrowSchema) * len(children))(*map(ctypes.pointer, children))
        keep.append(s.children)
    if dictionary is not None:
        s.dictionary = ctypes.pointer(dictionary)
    s.release = _release_schema
    keep.append(s)
    return s


def _array(length: int, buffers: list, keep: list, null_count: int = 0, children=(), dictionary=None) -> ArrowArray:
    a = ArrowArray(length=length, null_count=null_count, n_buffers=len(buffers), n_children=len(children))
    a.buffers = (ctypes.c_void_p * len(buffers))(*(None if b is None else b.ctypes.data for b in buffers))
    keep += [a.buffers, *(b for b in buffers if b is not None)]
    if children:
        a.children = (ctypes.POINTER(ArrowArray) * len(children))(*map(ctypes.pointer, children))
        keep.append(a.children)
    if dictionary is not None:
        a.dictionary = ctypes.pointer(dictionary)
    a.release = _release_array
    keep.append(a)
    return a


def list_series(offsets: np.ndarray, values: np.ndarray, valid: Optional[np.ndarray] = None) -> pl.Series:
    """list[i64] column: row i is values[offsets[i]:offsets[i + 1]], null where `valid` is False."""
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    values = np.ascontiguousarray(values, dtype=np.int64)
    keep: list = []
    bitmap, nulls = _validity(valid)
    child = _array(len(values), [None, values], keep)
    array = _array(len(offsets) - 1, [bitmap, offsets], keep, nulls, children=[child])
    schema = _schema(b"+L", keep, children=[_schema(b"l", keep)])  # large list of int64
    return _Exported(schema, array, keep).import_series()


def categorical_series(codes: np.ndarray, categories: list) -> pl.Series:
    """Categorical column: row i is categories[codes[i]]."""
    codes = np.ascontiguousarray(codes, dtype=np.uint32)
    encoded = [c.encode("utf-8") for c in categories]
    ends = np.zeros(len(encoded) + 1, dtype=np.int32)
    np.cumsum([len(e) for e in encoded], out=ends[1:])
    data = np.frombuffer(b"".join(encoded) or b"\0", dtype=np.uint8).copy()
    keep: list = []
    dictionary = _array(len(encoded), [None, ends, data], keep)
    array = _array(len(codes), [None, codes], keep, dictionary=dictionary)
    schema = _schema(b"I", keep, dictionary=_schema(b"u", keep))  # uint32 keys, utf8 values
    return _Exported(schema, array, keep).import_series()


def _validity(valid: Optional[np.ndarray]):
    if valid is None:
        return None, 0
    nulls = len(valid) - int(np.count_nonzero(valid))
    return (np.packbits(valid, bitorder="little") if nulls else None), nulls
