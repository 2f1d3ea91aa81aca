"""Recorder (github uiuc-hpc/Recorder) trace folders, format 2.4: metadata, call signatures, grammar, timestamps."""
from .format import METADATA, SUPPORTED_VERSION, RankTrace, RecorderRaw, is_recorder_trace, read_trace

__all__ = ["METADATA", "SUPPORTED_VERSION", "RankTrace", "RecorderRaw", "is_recorder_trace", "read_trace"]
