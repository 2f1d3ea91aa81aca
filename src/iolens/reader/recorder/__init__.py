"""Recorder (github uiuc-hpc/Recorder) trace folders, releases 2.3, 2.4 and 2.5: metadata, call signatures,
grammar, timestamps."""
from .format import METADATA, SUPPORTED_VERSIONS, RankTrace, RecorderRaw, is_recorder_trace, read_trace

__all__ = ["METADATA", "SUPPORTED_VERSIONS", "RankTrace", "RecorderRaw", "is_recorder_trace", "read_trace"]
