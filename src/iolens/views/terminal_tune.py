"""Terminal rendering of `iolens tune`: best against baseline, the verdict, the knobs that mattered."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from .terminal_compare import VERDICT_STYLE
from .units import human_ratio, human_seconds


def render_tune(result: dict, console: Console) -> None:
    measure = "slowest rank's I/O time" if result["objective"] == "io" else "wall time"
    if result["nothing_to_tune"]:
        console.print(f"[bold yellow]{escape(result['nothing_to_tune'])}[/]")
    base, best = result["baseline"], result["best"]
    console.print(f"baseline  {human_seconds(base['median'])} {measure} (median of {base['runs']} runs)")
    if best:
        changed = ", ".join(f"{k}={v}" for k, v in best["changed"].items()) or "as given"
        console.print(f"best      {human_seconds(best['median'])} (median of {best['runs']} runs): {escape(changed)}")
    v = result["verdict"]
    if v:
        factor = f" {human_ratio(v['factor'])}" if v["factor"] else ""
        console.print(f"verdict   [{VERDICT_STYLE.get(v['verdict'], 'bold')}]{v['verdict']}{factor}[/]  "
                      f"[dim]{escape(v['reason'])}[/]")
    elif result.get("reason"):
        console.print(f"verdict   none: {escape(result['reason'])}")
    if result["knobs_that_mattered"]:
        console.print("knobs of the best configuration, measured effect (median of the runs without / with it):")
        for k in result["knobs_that_mattered"]:
            console.print(_effect_line(k))
    space = result["space"] or {}
    if space.get("code_changes"):
        console.print("code changes to try (not run): " + ", ".join(escape(k["name"]) for k in space["code_changes"]))
    console.print(f"[dim]{result['runs']} runs ({result['failed']} failed) of a budget of {result['budget']}; "
                  f"space: {space.get('size', 0):,} configurations[/]")
    files = result.get("files", {})
    console.print(f"study: {escape(result['study'])}  " +
                  "  ".join(f"{escape(str(p).rsplit('/', 1)[-1])}" for p in files.values()))


def _effect_line(k: dict) -> str:
    was = "not set" if k["baseline"] is None else k["baseline"]
    head = f"  {escape(k['knob'])} = {escape(str(k['value']))} (baseline: {escape(str(was))}): "
    among = (" among runs with " + ", ".join(f"{n}={v}" for n, v in k["among"].items())) if k["among"] else ""
    if k["effect"] is None:
        return head + f"[dim]not measured apart from the other knobs{escape(among)}[/]"
    tag = "" if k["mattered"] else "  [dim](within the noise)[/]"
    return head + (f"{human_seconds(k['median_without'])} → {human_seconds(k['median_with'])} "
                   f"({human_ratio(k['effect'])}; {k['runs_without']} vs {k['runs_with']} runs{escape(among)}){tag}")
