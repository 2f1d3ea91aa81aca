"""Terminal rendering of `iolens compare`: runs as columns (the first the baseline), wrapped to the width."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..model.darshan import LAYER_NAMES, SIZE_BIN_LABELS
from ..analysis.units import plural
from .units import human_bytes, human_count, human_rate, human_ratio, human_seconds

# the training loop's rows (a run with spans: `runs[].loop`)
LOOP_ROWS = (("loop_time", "training loop"), ("wait_time", "  waiting for data"),
             ("checkpoint_time", "  in checkpoints"), ("compute_time", "  computing"),
             ("io_wait", "  waiting for I/O"))  # after start-up: the verdict's measure

VERDICT_STYLE = {"faster": "bold green", "slower": "bold red", "no real change": "bold", "baseline": "dim",
                 "not judged": "dim"}
NAME_WIDTH = 24
UNMATCHED_SHOWN = 10  # per run: a list of thousands of files would hide the rest of the comparison
RUN_WIDTH = 20  # "736.4 MiB/s (4.14×)"


def runs_per_table(width: int) -> int:
    """How many run columns fit beside the row names (at least the baseline and one other)."""
    return max(2, (width - NAME_WIDTH - 2) // (RUN_WIDTH + 3))


def render_compare(result: dict, console: Console) -> None:
    for warning in result["warnings"]:
        console.print(_hanging("", Text(warning, style="bold yellow"), Text("note:", style="bold yellow")))
    runs = result["runs"]
    per = runs_per_table(console.width)
    # the baseline stays the first column of every table; the others are wrapped
    others = list(range(1, len(runs)))
    step = per - 1
    for start in range(0, len(others), step):
        console.print(_runs_table(runs, [0] + others[start:start + step]))
    console.print(Text(f"rule: {result['rule']['text']}", style="dim"))
    _render_config(result, console)
    _render_insights(result, console)
    _render_file_bytes(result, console)
    unmatched = result["files"]["unmatched"]
    if unmatched:
        console.print(Text(f"Files in one run only ({len(unmatched):,})", style="bold"))
        for i, run in enumerate(runs):
            names = [u["name"] for u in unmatched if u["run"] == i]
            for name in names[:UNMATCHED_SHOWN]:
                console.print(_hanging("  ", Text(f"{run['label']}: {name}")))
            if len(names) > UNMATCHED_SHOWN:
                more = len(names) - UNMATCHED_SHOWN
                console.print(Text(f"  {run['label']}: … and {more:,} more (--json lists all)", style="dim"))


def _cell(value, ratio, fmt) -> Text:
    text = Text(fmt(value))
    if ratio is not None:
        text.append(f" ({human_ratio(ratio)})", style="dim")
    return text


def _runs_table(runs: list, idx: list) -> Table:
    table = Table(show_edge=False, padding=(0, 1), title_justify="left")
    table.add_column("run", no_wrap=True, min_width=12, max_width=NAME_WIDTH, overflow="fold")
    for i in idx:
        table.add_column(Text(runs[i]["label"]), justify="right", overflow="fold", max_width=RUN_WIDTH)
    sel = [runs[i] for i in idx]

    def row(name, fmt, get, ratio_key=None):
        table.add_row(name, *[_cell(get(r), (r["ratio"].get(ratio_key) if ratio_key and not r["verdict"]["verdict"]
                                             == "baseline" else None), fmt) for r in sel])

    table.add_row("verdict", *[Text(r["verdict"]["verdict"] + (f" {human_ratio(r['verdict']['factor'])}"
                                                                if r["verdict"].get("factor") else ""),
                                    style=VERDICT_STYLE[r["verdict"]["verdict"]]) for r in sel])
    row("run time", human_seconds, lambda r: r["run_time"], "run_time")
    if any(r.get("loop") for r in sel):  # DFTracer traces: the training loop and what it waited for
        for key, name in LOOP_ROWS:
            row(name, human_seconds, lambda r, k=key: (r.get("loop") or {}).get(k))
    row("I/O time, slowest rank", human_seconds, lambda r: r["io_time"], "io_time")
    layers = [name for name in LAYER_NAMES if any(name in r["layers"] for r in sel)]
    for name in layers:
        row(f"  {name}", human_seconds, lambda r, n=name: r["layers"].get(n, {}).get("slowest_rank_io_time"))
    row("bytes read", human_bytes, lambda r: r["bytes_read"], "bytes_read")
    row("bytes written", human_bytes, lambda r: r["bytes_written"], "bytes_written")
    row("reads", human_count, lambda r: r["reads"], "reads")
    row("writes", human_count, lambda r: r["writes"], "writes")
    for key, label in SIZE_BIN_LABELS.items():
        if any(r["request_sizes"].get(key) for r in sel):
            row(f"  {label}", human_count, lambda r, k=key: r["request_sizes"][k])
    row("metadata time", human_seconds, lambda r: r["meta_time"], "meta_time")
    row("bandwidth", human_rate, lambda r: r["bandwidth"], "bandwidth")
    row("files", human_count, lambda r: r["files"])
    row("ranks", human_count, lambda r: r["ranks"])
    return table


def fmt_config(value) -> str:
    """A configuration value as people write it: on/off, percentages, stripe layouts, KEY=VALUE."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:.0%}"
    if isinstance(value, dict):
        if "stripe_size" in value:
            return (f"{human_bytes(value['stripe_size'])} × {value['stripe_count']} on OSTs "
                    + ",".join(map(str, value["osts"])))
        return " ".join(f"{k}={v}" for k, v in value.items()) or "–"
    return str(value) or "–"


def _render_config(result: dict, console: Console) -> None:
    runs = result["runs"]
    changed = [c for c in result["config"] if any(c["changed"])]
    same = [c["label"] for c in result["config"] if not any(c["changed"]) and ":" not in c["key"]]
    same_files = {c["key"].split(":", 1)[1] for c in result["config"] if not any(c["changed"]) and ":" in c["key"]}
    if same_files:
        same.append(f"access pattern and Lustre layout of {plural(len(same_files), 'matched file')}")
    console.print(Text("What changed in the configuration", style="bold"))
    if not changed:
        console.print(Text("  nothing the logs record"))
    for c in changed:
        console.print(Text(f"  {c['label']}:"))
        for run, value, diff in zip(runs, c["values"], c["changed"]):
            console.print(Text(f"    {run['label']}: {fmt_config(value)}", style="bold" if diff else ""))
    if same:
        console.print(_hanging("  ", Text("unchanged: " + ", ".join(same), style="dim")))


# the colour of an insight's change (analysis.compare.change: a problem resolved or a healthy finding appearing
# is good news, a new problem or a lost healthy finding bad, a problem still there amber, an info note neutral)
TONE_STYLE = {"good": "green", "bad": "red", "warn": "yellow", "neutral": "cyan"}


def _hanging(indent: str, text: Text, tag: Text | None = None) -> Table:
    """`indent` [tag] text, the text's wrapped lines aligned under its first one."""
    grid = Table.grid(padding=(0, 1) if tag is not None else 0)
    if indent:
        grid.add_column(width=len(indent) - (1 if tag is not None else 0), no_wrap=True)
    if tag is not None:
        grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row(*([""] if indent else []), *([tag] if tag is not None else []), text)
    return grid


def _render_insights(result: dict, console: Console) -> None:
    runs = result["runs"]
    console.print(Text("What changed in the diagnosis", style="bold"))
    for run, diff in zip(runs, result["insights"]):
        if diff is None:
            continue
        console.print(Text(f"  {runs[0]['label']} → {run['label']}:"))
        if not any(diff.values()):
            console.print(Text("    no insight before or after"))
        for status in ("resolved", "new", "still", "file_in_one_run"):
            for item in diff.get(status, []):
                line = Text(item["summary"])
                if item["file"]:
                    line.append(f"  [{item['file']}]", style="dim")
                tag = item.get("label") or ("one run" if status == "file_in_one_run" else status)
                style = TONE_STYLE[item.get("tone") or "neutral"]
                console.print(_hanging("    ", line, Text(f"{tag:<8}", style=style)))


FILE_BYTES_SHOWN = 10


def _render_file_bytes(result: dict, console: Console) -> None:
    """Runs of different tracers (a job's Darshan logs and its DFTracer trace): the files both saw, byte for
    byte (`files.bytes` in --json, for any runs)."""
    runs = result["runs"]
    lineup = result["files"].get("bytes") or []
    if len({r.get("tracer", "darshan") for r in runs}) < 2 or not lineup:
        return
    same = [f for f in lineup if f["same"]]
    console.print(Text(f"Bytes per file ({' vs '.join(r['label'] for r in runs)}): {len(same):,} of {len(lineup):,} "
                       "files matched across the runs moved the same bytes", style="bold"))

    def moved(f, i):
        r, w = f["bytes_read"][i], f["bytes_written"][i]
        if r is None:
            return "–"
        return " + ".join(p for p in ((f"{human_bytes(r)} read" if r else ""), (f"{human_bytes(w)} written" if w else ""))
                          if p) or "0 B"

    def biggest(f):
        return max((r or 0) + (w or 0) for r, w in zip(f["bytes_read"], f["bytes_written"]))

    for f in sorted(same, key=biggest, reverse=True)[:5]:
        console.print(_hanging("  ", Text(f"same: {f['key']}: {moved(f, 0)}")))
    differ = sorted((f for f in lineup if not f["same"]), key=biggest, reverse=True)
    for f in differ[:FILE_BYTES_SHOWN]:
        console.print(_hanging("  ", Text(f"differ: {f['key']}: " + "; ".join(
            f"{r['label']} {moved(f, i)}" for i, r in enumerate(runs)), style="yellow")))
    if len(differ) > FILE_BYTES_SHOWN:
        console.print(Text(f"  … and {len(differ) - FILE_BYTES_SHOWN:,} more that differ (--json lists all)", style="dim"))
