"""Command line: one module per subcommand, wired by `main`."""
