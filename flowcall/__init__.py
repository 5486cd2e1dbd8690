"""FlowCall: build, run and inspect LLM tool-calling flows."""

__version__ = "0.1.0"
