"""The `flowcall` command."""
