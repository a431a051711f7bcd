"""Checkpoints for rewind (docs/design.md §12): the project's files before and after each turn,
in a git object store of avatar's own outside the project (`store`), each session's turns and
the checkpoints they map to (`turns`), and a restore that puts a checkpoint back in place file
by file, or leaves the tree as it was (`restore`)."""
