"""The engine server (docs/design.md §11): live sessions shared by clients (`hub`), the socket they
reach it on (`protocol`, `client`, `socket`). Between the engine and the CLI."""
