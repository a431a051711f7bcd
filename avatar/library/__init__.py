"""The library layer (DESIGN §1): every provider's sessions as one library — search, export,
archives, lineage, actions."""
