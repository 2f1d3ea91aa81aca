"""Command line: one module per subcommand, wired by `main`."""
import os
import signal
import sys


def interrupted_at_start(signum, frame):
    """Ctrl-C while the command still imports its modules (seconds on a busy machine), before `main` can turn it
    into one line: that line and exit status 130, not a traceback. `main` puts Python's own handler back."""
    os.write(2, b"iolens: interrupted\n")
    os._exit(130)


if os.path.basename(sys.argv[0]) == "iolens" and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, interrupted_at_start)
