"""The model: a Darshan log as plain columnar tables (polars), built lazily from the reader's records."""
from .log import Log, read

__all__ = ["Log", "read"]
