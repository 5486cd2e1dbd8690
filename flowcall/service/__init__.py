"""The front door the CLI, the studio and the HTTP API go through: the store, the tools and the
engine, wired."""
