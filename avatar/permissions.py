"""The permission policy and its handler type (docs/design.md §3, §8), under their published name:
the real module is `avatar.policy.permissions`; this name is the public API's."""

from avatar.policy.permissions import *  # noqa: F403
from avatar.policy.permissions import __all__ as __all__
