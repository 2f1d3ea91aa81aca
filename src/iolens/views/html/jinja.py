"""The pages' one Jinja environment: every page (report, compare, fleet) extends templates/base.html.j2 and
inlines its scripts and styles from views/static."""
from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, select_autoescape

from ..terminal_compare import fmt_config
from ..units import human_bytes, human_count, human_rate, human_ratio, human_seconds


def views_dir() -> Path:
    return Path(str(resources.files("iolens.views")))


def static(names) -> str:
    """The named files of views/static, one after the other (a page's inlined scripts or styles)."""
    base = views_dir() / "static"
    return "\n".join((base / n).read_text(encoding="utf-8") for n in names)


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(str(views_dir() / "templates")),
                      autoescape=select_autoescape(["html", "j2"]), keep_trailing_newline=True)
    env.filters.update(seconds=human_seconds, bytes=human_bytes, count=human_count, rate=human_rate,
                       ratio=human_ratio, config=fmt_config)
    return env


def render(template: str, *, scripts, styles, **context) -> str:
    """Page `template` with `context`, its `scripts` and `styles` (views/static names) inlined."""
    return environment().get_template(template).render(css=static(styles), js=static(scripts), **context)
