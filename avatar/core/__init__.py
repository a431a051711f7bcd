"""The core layer (DESIGN §1): events, errors, ids, times, file writing, the config schema."""
