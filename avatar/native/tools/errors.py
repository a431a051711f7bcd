"""The one way a native tool fails: an error the model reads as the tool's result."""


class ToolError(Exception):
    """A tool failed in a way the model should read (bad path, refused, not found...)."""
