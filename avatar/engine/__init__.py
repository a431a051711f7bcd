"""The engine layer (docs/design.md §1, §8): the Engine, the open session, opening, switching,
status, per-session settings."""
