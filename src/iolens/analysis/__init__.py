"""Metrics and insights computed from the model tables only."""
