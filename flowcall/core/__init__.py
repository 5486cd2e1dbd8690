"""The base types every layer shares: the flow, runs and their steps, messages, errors, configuration."""
