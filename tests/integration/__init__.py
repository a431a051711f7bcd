"""Integration tests: the real agent CLIs against the fake model server."""
