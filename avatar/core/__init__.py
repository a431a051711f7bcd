"""The core layer (docs/design.md §1): events, errors, ids, times, file writing, the config
schema."""
