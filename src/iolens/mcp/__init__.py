"""`iolens mcp`: iolens as a Model Context Protocol server, so that AI agents answer from iolens' own numbers.

    command.py  the `iolens mcp` subcommand (the CLI imports it by name only: the two faces sit side by side)
    server.py   the tools declared on the official `mcp` SDK; stdio, or streamable HTTP on 127.0.0.1
    tools.py    what each tool does: confined to the --root directories, bounded, every number traced
"""
