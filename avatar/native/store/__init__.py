"""The native session store (docs/design.md §6): the session files, their writer, index and
versions."""
