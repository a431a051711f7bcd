"""The library layer (docs/design.md §1): every provider's sessions as one library — search, export,
archives, lineage, actions."""
