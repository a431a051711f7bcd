"""The policy layer (docs/design.md §1, §10): what an agent may touch and what leaves avatar.

Scope patterns and the protected paths decide at every front door (native tools, ACP fs and
terminal callbacks, permission requests); the sandbox makes the kernel enforce the same walls
on every process avatar starts; trust decides which project config may run anything; the
secret detector cleans every output.
"""
