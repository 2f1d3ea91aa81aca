"""Collecting traces: running programs under Darshan."""
