"""The offline HTML explorer page: `write_report(log, path, insights=...)` renders what it is given
(`iolens.report` diagnoses first)."""
from .filters import Filters
from .page import DEFAULT_MAX_OPS, PAGE_TABLES, build_payload, page_payload, render_page, write_page, write_report

__all__ = ["DEFAULT_MAX_OPS", "Filters", "PAGE_TABLES", "build_payload", "page_payload", "render_page", "write_page",
           "write_report"]
