"""The native agent: one session's loop, context, compaction and system prompt."""
