"""The providers layer (docs/design.md §1): the provider table (data), its registry, and what avatar
knows of each provider beyond it."""
