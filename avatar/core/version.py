"""avatar's version, in the one place the package build reads it (`pyproject.toml`)."""

__version__ = "0.1.0"
