"""The value rules of config fields beyond their types, as `Annotated` markers on the schema
(`avatar.core.config`): YAML's bare `on`/`off` read as the words, numeric bounds, socket names.

Each rule is written once, as a method of its marker: `before(value)`, a conversion ahead of
the field's own check, and `keeps(value)`, a check after it. Both checkers of a config file
call them: pydantic through each marker's `__get_pydantic_core_schema__` (with pydantic's own
messages), and `avatar.core.exact`, which builds exactly-typed data without pydantic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable


class Bounds:
    """`Annotated` marker: a number (or None) that must be > `gt` and, if given, ≤ `le`.

    Read by pydantic when a file is checked; the messages are pydantic's own for `gt`/`le`.
    """

    def __init__(self, gt: float, le: float | None = None) -> None:
        self.gt, self.le = gt, le

    def keeps(self, value: float | None) -> bool:
        """True when `value` is within the bounds (or None)."""
        return value is None or (value > self.gt and (self.le is None or value <= self.le))

    def __get_pydantic_core_schema__(self, source: Any, handler: Callable[[Any], Any]) -> Any:
        """Wrap the field's own schema in a range check."""
        from pydantic_core import PydanticCustomError, core_schema

        def check(value: float | None) -> float | None:
            if value is None or self.keeps(value):
                return value
            if not value > self.gt:
                raise PydanticCustomError(
                    "greater_than", "Input should be greater than {gt}", {"gt": self.gt}
                )
            raise PydanticCustomError(
                "less_than_equal", "Input should be less than or equal to {le}", {"le": self.le}
            )

        return core_schema.no_info_after_validator_function(check, handler(source))


class OffIsFalse:
    """`Annotated` marker: YAML reads a bare `off` as false, so false means "off" here."""

    @staticmethod
    def before(value: Any) -> Any:
        """`False` as `"off"`, before the field's own check."""
        return "off" if value is False else value

    def __get_pydantic_core_schema__(self, source: Any, handler: Callable[[Any], Any]) -> Any:
        """Run `before` ahead of the field's own check."""
        from pydantic_core import core_schema

        return core_schema.no_info_before_validator_function(self.before, handler(source))


class OnOff:
    """`Annotated` marker: YAML reads a bare `on` as true and `off` as false; here they are
    the words."""

    @staticmethod
    def before(value: Any) -> Any:
        """`True` as `"on"` and `False` as `"off"`, before the field's own check."""
        if isinstance(value, bool):
            return "on" if value else "off"
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: Callable[[Any], Any]) -> Any:
        """Run `before` ahead of the field's own check."""
        from pydantic_core import core_schema

        return core_schema.no_info_before_validator_function(self.before, handler(source))


#: The sockets `scope.sockets` knows by name (`avatar.policy.sockets`); anything else there is
#: a path.
SOCKET_NAMES = ("ssh-agent", "gpg-agent", "docker")


class SocketNames:
    """`Annotated` marker: each entry of `scope.sockets` is a known name or a path (absolute,
    `~/…` or `$VAR/…`)."""

    @staticmethod
    def known(entry: str) -> bool:
        """True for a known socket's name or a path."""
        return entry in SOCKET_NAMES or entry.startswith(("/", "~", "$"))

    def keeps(self, value: list[str]) -> bool:
        """True when every entry is a known name or a path."""
        return all(self.known(entry) for entry in value)

    def __get_pydantic_core_schema__(self, source: Any, handler: Callable[[Any], Any]) -> Any:
        """Check every entry after the field's own check."""
        from pydantic_core import PydanticCustomError, core_schema

        def check(value: list[str]) -> list[str]:
            for entry in value:
                if not self.known(entry):
                    raise PydanticCustomError(
                        "socket",
                        "{entry!r} is neither a known socket ({known}) nor a path",
                        {"entry": entry, "known": ", ".join(SOCKET_NAMES)},
                    )
            return value

        return core_schema.no_info_after_validator_function(check, handler(source))
