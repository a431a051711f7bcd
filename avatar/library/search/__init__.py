"""Full-text search over every provider's sessions."""
