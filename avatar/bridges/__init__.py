"""Bridges: one per transport, each turning an agent into avatar's event model."""
