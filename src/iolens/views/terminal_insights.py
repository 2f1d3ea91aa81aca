"""Terminal rendering of diagnosis insights: rich panels on a terminal, plain text when piped."""
from __future__ import annotations

import sys

from rich.console import Console, Group
from rich.panel import Panel
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from ..analysis.summary import unseen_sentence
from .labels import evidence_source
from .terminal import phrase_lines
from ..analysis.units import plural
from .units import human_bytes, human_count, human_rate, human_ratio, human_seconds

STYLE = {"critical": "bold red", "warning": "bold yellow", "info": "cyan", "ok": "green"}
SYNTAX = {"c": "c", "shell": "bash", "ini": "ini", "fortran": "fortran", "text": "text", "python": "python"}


# seconds summed over ranks' operations (rank-seconds), not a time the run or one rank took: said so, so that
# "4.14 min" beside a 6-second run reads as what it is (the per-rank figures are the busiest_rank_*,
# max_rank_*, slowest_rank_* and *_per_rank_s metrics beside them)
RANK_SUMMED_SECONDS = {
    **dict.fromkeys(("small_request_time_s", "metadata_time_s", "data_time_s", "hdf5_metadata_time_s",
                     "hdf5_data_time_s", "stdio_time_s", "mpiio_time_s", "posix_time_inside_s", "overhead_s",
                     "posix_read_time_s"), "over all ranks"),
    "idle_rank_time_s": "over the ranks waiting",
}
IDENTIFIERS = ("heaviest_rank", "serial_rank", "slowest_rank", "heaviest_ost", "ost")  # rank 1024, not 1,024
RATIOS = ("ratio", "slowdown")  # and every …max_over_mean


def format_metric(name: str, value) -> str:
    """A metric value in human units, judged by its name (…_bytes_per_s, …_bytes, …_s, …_share): a rate reads
    as a rate (6.09 GiB/s), a sum over ranks says so (4.14 min over all ranks)."""
    if value is None:
        return "-"
    if name.endswith("_bytes_per_s"):
        return human_rate(value)
    if name.endswith("seconds_per_gib"):
        return f"{human_seconds(value)}/GiB"
    if "_share" in name or name.endswith("_coverage"):
        return f"{float(value) * 100:.1f}%"
    if "bytes" in name or name in ("stripe_size", "recommended_stripe_size"):
        return human_bytes(value)
    if name.endswith("_s"):
        return " ".join(filter(None, (human_seconds(value), RANK_SUMMED_SECONDS.get(name))))
    if name.endswith("_time"):  # RANK_IMBALANCE's max_rank_time / mean_rank_time
        return human_seconds(value)
    if name.endswith("_fitted"):
        return "yes" if value else "no"
    if "max_over_mean" in name or name in RATIOS:
        return human_ratio(value)
    if name in IDENTIFIERS:
        return str(int(value))
    if isinstance(value, float) and not float(value).is_integer():
        return f"{value:,.3g}" if abs(value) < 1000 else f"{value:,.0f}"
    return human_count(value)


def saving_line(r: dict, source: str = "") -> str:
    """The expected saving in one short line (the JSON's saving_basis says how it was derived); a finding on a
    trace's spans saves the training loop's time."""
    of = "the training loop's time" if source == "spans" else "the slowest rank's I/O time"
    return f"expected saving here: ≈ {human_seconds(r['expected_saving'])} of {of}"


def as_above(seen: dict, r: dict, code: str) -> str | None:
    """The line that stands for a recommendation already printed under an earlier insight (the same title and
    snippet), or None the first time (`seen` remembers it: its insight's code and its saving). Its saving line is
    printed per insight: when that figure differs from the earlier one, the line says the change is the same but
    the saving is this finding's."""
    key = (r["title"], r["snippet"])
    if key not in seen:
        seen[key] = (code, r.get("expected_saving"))
        return None
    first, saving = seen[key]
    if _same_seconds(saving, r.get("expected_saving")):
        return f"(as under {first} above)"
    return f"(the same change as under {first} above; the saving here is for this finding's requests)"


def _same_seconds(a, b) -> bool:
    """The two savings print the same (both not estimated, or within 0.5%)."""
    if a is None or b is None:
        return a is b
    return abs(a - b) <= 0.005 * max(abs(a), abs(b))


def _ranks(ranks, limit=12) -> str:
    if not ranks:
        return "all / not rank-specific"
    text = ", ".join(map(str, ranks[:limit]))
    return text + (f", … ({len(ranks)} listed)" if len(ranks) > limit else "")


def _window(window) -> str:
    return "-" if not window else f"{window[0]:.3f} s – {window[1]:.3f} s"


def verdict(shown: list, unseen: dict | None) -> str | None:
    """The line that says what the insights shown cannot (`analysis.summary.unseen_sentence`), or "No problems
    found." when nothing is shown and nothing was missed; None when there are insights and nothing was missed."""
    said = unseen_sentence(unseen, bool(shown))
    if said is None and not shown:
        return "No problems found."
    return said


def render(path: str, insights: list, job: dict | None = None, show_all: bool = False,
           console: Console | None = None, unseen: dict | None = None, kind: str | None = None) -> None:
    """Print insights (dicts from Insight.to_dict()) most severe first; `unseen`: what the diagnosis could not
    look at (`pipeline.judge.unseen`: skipped modules, an empty log), said instead of "No problems found";
    `kind`: the log's source, whose words name the evidence's source (`calls of the Recorder trace`)."""
    shown = [i for i in insights if show_all or i["severity"] in ("critical", "warning")]
    hidden = len(insights) - len(shown)
    if console is None and not sys.stdout.isatty():
        _render_plain(path, shown, hidden, job, unseen, kind)
        return
    console = console or Console()
    counts = {s: sum(1 for i in insights if i["severity"] == s) for s in STYLE}
    head = Text()
    head.append(f"{path}\n", style="bold")
    if job:
        head.append(f"{job.get('exe') or '?'}  ·  {_who(job)}  ·  {human_seconds(job.get('run_time'))}\n",
                    style="dim")
    head.append("  ".join(f"{counts[s]} {s}" for s in STYLE if counts[s]) or "no findings",
                style="bold")
    console.print(head)
    said = verdict(shown, unseen)
    if said == "No problems found.":
        console.print(Text("No problems found: nothing here is worth a warning.", style="green"))
    elif said and not shown:
        console.print(Text(said, style="bold yellow"))
    seen: dict = {}
    for i in shown:
        console.print(_panel(i, seen, console.width, kind))
    if said and shown:
        console.print(Text(said, style="bold yellow"))
    if hidden:
        console.print(Text(f"{plural(hidden, 'informational insight')} hidden; --all shows them.", style="dim"))


def _who(job: dict) -> str:
    """'8 ranks' for one log; for a job of many logs, its processes and steps (its ranks are a merge's)."""
    procs = job.get("processes")
    if not procs:
        n = job.get("nprocs")
        return f"{n} rank{'' if n == 1 else 's'}"
    steps = len({p["step"] for p in procs})
    return f"{len(procs)} processes in {steps} step{'s' if steps != 1 else ''}"


def numbers_text(metrics: dict, width: int) -> str:
    """The `numbers:` cell, broken only between two metrics, so that a value never parts from its unit
    (`median_end_s=539` / `ms`) at the edge of a terminal."""
    pieces = [(", ", f"{k}={format_metric(k, v)}") for k, v in list(metrics.items())[:12]]
    return phrase_lines(pieces, width)


def _panel(i: dict, seen: dict, width: int = 160, kind: str | None = None) -> Panel:
    sev = i["severity"]
    ev = i["evidence"]
    parts = [Text(i["summary"])]
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="bold dim")
    facts.add_column()
    facts.add_row(*_ranks_row(i))
    if ev["files"]:
        facts.add_row("files", "\n".join(ev["files"][:5]) + (f"\n… ({len(ev['files'])} listed)"
                                                               if len(ev["files"]) > 5 else ""))
    if i.get("processes"):
        facts.add_row("processes", processes_text(i["processes"]))
    facts.add_row("window", _window(ev["time_window"]))
    if ev["metrics"]:
        # the cell's width: the panel's borders and padding (4), the widest label and the grid's gap (2)
        label = max(len(s) for s in ("numbers", "processes" if i.get("processes") else ""))
        facts.add_row("numbers", numbers_text(ev["metrics"], width - 4 - label - 2))
    src = evidence_source(i["source"], kind) + (" (partial: the trace is truncated)" if i["partial"] else "")
    facts.add_row("source", src)
    parts += [Text(""), facts]
    for n, r in enumerate(i["recommendations"], 1):
        parts.append(Text(f"\n{n}. {r['title']}", style="bold"))
        if r.get("expected_saving"):
            parts.append(Text(saving_line(r, i["source"]), style="dim"))
        repeated = as_above(seen, r, i["code"])
        if repeated:
            parts.append(Text(repeated, style="dim"))
            continue
        if r["detail"]:
            parts.append(Text(r["detail"], style="dim"))
        if r["snippet"]:
            parts.append(Panel(Syntax(r["snippet"], SYNTAX.get(r["language"], "text"), word_wrap=True,
                                      background_color="default"),
                               border_style="dim", expand=False))
        if r.get("try_now"):
            parts.append(Text(f"without recompiling: {r['try_now']}"))
    title = Text()
    title.append(f" {sev.upper()} ", style=STYLE[sev] + " reverse")
    title.append(f" {i['code']}", style=STYLE[sev])
    if len(title) + 2 + len(i["title"]) + 6 <= width:  # the border's corners and padding
        title.append(": ", style=STYLE[sev])
        title.append(i["title"])
    else:  # a panel's title is cut at its width, never wrapped: the insight's title opens the panel instead
        parts.insert(0, Text(i["title"], style="bold"))
    return Panel(Group(*parts), title=title, title_align="left", border_style=STYLE[sev].replace("bold ", ""))


def _ranks_row(i: dict) -> tuple:
    """A job's finding names its rows as the report's timeline does (`step·pid`, `step·rN`), never the merged
    log's internal rank numbers."""
    if i.get("rows") is not None:
        return "rows", _ranks(i["rows"])
    return "ranks", _ranks(i["evidence"]["ranks"])


def processes_text(processes: list) -> str:
    """The processes of a job behind a finding: `step 1 (python3): worker pid 3688, ...`."""
    return "; ".join(f"step {p['step']}" + (f" ({p['exe']})" if p["exe"] else "") + f": {p['role']}"
                     + (f" pid {p['pid']}" if p["pid"] else "") for p in processes)


def _render_plain(path: str, shown: list, hidden: int, job: dict | None, unseen: dict | None = None,
                  kind: str | None = None) -> None:
    out = sys.stdout.write
    seen: dict = {}
    out(f"{path}\n")
    said = verdict(shown, unseen)
    if said and not shown:
        out(said + "\n")
    for i in shown:
        ev = i["evidence"]
        out(f"\n[{i['severity'].upper()}] {i['code']}: {i['title']}\n")
        out(f"  {i['summary']}\n")
        out("  {}: {}\n".format(*_ranks_row(i)))
        if i.get("processes"):
            out(f"  processes: {processes_text(i['processes'])}\n")
        if ev["files"]:
            out(f"  files: {', '.join(ev['files'][:5])}" + (" …" if len(ev["files"]) > 5 else "") + "\n")
        out(f"  window: {_window(ev['time_window'])}\n")
        if ev["metrics"]:
            out("  numbers: " + ", ".join(f"{k}={format_metric(k, v)}" for k, v in ev["metrics"].items()) + "\n")
        out(f"  source: {evidence_source(i['source'], kind)}{' (partial)' if i['partial'] else ''}\n")
        for n, r in enumerate(i["recommendations"], 1):
            out(f"  {n}. {r['title']}\n")
            if r.get("expected_saving"):
                out(f"     {saving_line(r, i['source'])}\n")
            repeated = as_above(seen, r, i["code"])
            if repeated:
                out(f"     {repeated}\n")
                continue
            if r["detail"]:
                out(f"     {r['detail']}\n")
            if r["snippet"]:
                for line in r["snippet"].splitlines():
                    out(f"       {line}\n")
            if r.get("try_now"):
                out(f"     without recompiling: {r['try_now']}\n")
    if said and shown:
        out(f"\n{said}\n")
    if hidden:
        out(f"\n{plural(hidden, 'informational insight')} hidden; --all shows them.\n")
