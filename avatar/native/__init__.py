"""The built-in native agent: LLM clients, tools, models, session store, compaction, loop.

Nothing is imported here on purpose: `avatar --help` and other providers never pay for it.
"""
