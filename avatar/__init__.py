"""avatar: one terminal and one engine for every coding agent."""

__version__ = "0.1.0"
