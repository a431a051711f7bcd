"""The providers layer (DESIGN §1): the provider table (data), its registry, and what avatar knows
of each provider beyond it."""
