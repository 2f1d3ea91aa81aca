"""`iolens` entry point. Subcommands live in their own modules and are imported only when run."""
from __future__ import annotations

import importlib
import signal
import sys

import click

from ..errors import LogError
from . import interrupted_at_start
from ..version import __version__

SUBCOMMANDS = {
    "info": ("iolens.cli.info", "Job summary: layers, bytes, time, DXT coverage."),
    "files": ("iolens.cli.files", "One row per file: layers, bytes, ops, ranks, striping."),
    "export": ("iolens.cli.export", "Write the tables as Parquet or CSV."),
    "report": ("iolens.cli.report", "Write the interactive, offline HTML explorer page."),
    "diagnose": ("iolens.cli.diagnose", "Find I/O bottlenecks and say what to change."),
    "run": ("iolens.cli.run", "Run a command under Darshan with DXT on and keep its log."),
    "compare": ("iolens.cli.compare", "Did a change help? Verdict, configuration and insight diff."),
    "jobs": ("iolens.cli.jobs", "Many logs of one job: its steps, processes, helpers and data flows."),
    "fleet": ("iolens.cli.fleet", "Many logs: a Parquet store of every job, and one page over them."),
    "tune": ("iolens.cli.tune", "Search a command's runtime knobs (ROMIO hints, variables), model-guided."),
    "anonymize": ("iolens.cli.anonymize", "Write logs again with nothing that identifies the user, to share."),
    "sql": ("iolens.cli.sql", "SQL over every table of a log, a job, several logs or a fleet store."),
    # the MCP server sits beside the CLI (a layer of its own): its command lives in its package
    "mcp": ("iolens.mcp.command", "Serve iolens to AI agents over the Model Context Protocol (read-only)."),
}


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return list(SUBCOMMANDS)

    def get_command(self, ctx, name):
        if name not in SUBCOMMANDS:
            return None
        try:
            module = importlib.import_module(SUBCOMMANDS[name][0])
        except ModuleNotFoundError as exc:
            if exc.name == SUBCOMMANDS[name][0]:
                return None
            raise
        return module.command

    def format_commands(self, ctx, formatter):
        rows = [(name, help_) for name, (_, help_) in SUBCOMMANDS.items() if self.get_command(ctx, name)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="iolens")
def cli():
    """iolens: turn I/O traces (Darshan logs with DXT, Recorder, DFTracer) into answers."""


def _terminated(signum, frame):
    """SIGTERM (a batch system's time limit, `kill`): leave as Ctrl-C does, through every `finally`, so that an
    output being written is removed from its temporary name (output.whole_file) instead of being left there."""
    click.echo("iolens: terminated", err=True)
    raise SystemExit(128 + signum)


def main(argv=None):
    if signal.getsignal(signal.SIGINT) is interrupted_at_start:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if argv is None and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:  # the command (not a caller's process)
        signal.signal(signal.SIGTERM, _terminated)
    try:
        cli.main(args=argv, prog_name="iolens", standalone_mode=False)
    except LogError as exc:
        click.echo(f"iolens: error: {exc}", err=True)
        sys.exit(2)
    except click.exceptions.Abort as exc:
        # click turns Ctrl-C into Abort (after an empty line of its own)
        click.echo("iolens: interrupted" if isinstance(exc.__context__, KeyboardInterrupt) else "iolens: aborted",
                   err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except OSError as exc:  # a folder that cannot be made, a file that cannot be written: the user's to fix
        where = f"{exc.filename}: " if exc.filename else ""
        click.echo(f"iolens: error: {where}{exc.strerror or exc}", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        click.echo("iolens: interrupted", err=True)
        sys.exit(130)
    sys.exit(0)


if __name__ == "__main__":
    main()
