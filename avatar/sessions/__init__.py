"""Session types shared by every provider, and readers of each provider's on-disk store."""
