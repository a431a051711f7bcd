"""The event model every provider speaks (docs/design.md §1), under its published name: the real
module is `avatar.core.events`; this name is the public API's (the examples import it)."""

from avatar.core.events import *  # noqa: F403
from avatar.core.events import __all__ as __all__
