"""Runs handed to `flowcall worker` processes through a broker."""
