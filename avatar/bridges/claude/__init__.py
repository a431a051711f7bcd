"""The Claude Code bridge: one persistent `claude -p` stream-json process."""
