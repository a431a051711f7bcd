"""The one refusal of the scope policy, shared by the path checks, the shell allow-list and the
program checks."""


class ScopeDenied(Exception):
    """A path or command the scope refuses; the message is written for the agent to read."""
