"""The `cairn` command: one module per command family (`main` holds the parser)."""

from shared.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
