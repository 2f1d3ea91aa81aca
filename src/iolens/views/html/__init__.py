"""The offline HTML explorer page: `write_report(log, path)`."""
from .filters import Filters
from .page import build_payload, render_page, write_report

__all__ = ["Filters", "build_payload", "render_page", "write_report"]
