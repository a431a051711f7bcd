"""What a provider can do with sessions (list, load, resume, continue, fork, delete, cancel):
detected at runtime by its bridge (docs/design.md §1), remembered with the provider's facts."""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass
class SessionCapabilities:
    """What a running bridge can do with sessions, detected at runtime (docs/design.md §1)."""

    can_list: bool = False
    can_load: bool = False
    can_resume: bool = False
    can_continue_last: bool = False
    can_fork: bool = False
    can_delete: bool = False
    can_cancel: bool = False

    @classmethod
    def named(cls, *names: str) -> SessionCapabilities:
        """The capabilities given by name, without the `can_` prefix (the inverse of `names`)."""
        return cls(**{f"can_{n}": True for n in names})

    def names(self) -> list[str]:
        """The capability names that are true, without the `can_` prefix."""
        return [f.name.removeprefix("can_") for f in fields(self) if getattr(self, f.name)]
