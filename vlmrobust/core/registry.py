"""A small name -> object registry: explicit registration, duplicates raise,
unknown names suggest the closest registered one."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from vlmrobust.core.errors import VlmrobustError

T = TypeVar("T")


class Registry(Generic[T]):
    """Maps names to objects of one kind (builders, adapters, metrics, ...).

    >>> r: Registry[int] = Registry("number")
    >>> r.add("one", 1)
    >>> r.get("one")
    1
    >>> r.get("onr")
    Traceback (most recent call last):
    ...
    vlmrobust.core.errors.VlmrobustError: unknown number 'onr'; did you mean 'one'? (known: one)
    """

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._items: dict[str, T] = {}

    def add(self, name: str, obj: T) -> None:
        if not name or name != name.strip():
            raise ValueError(f"{self.kind} name must be a non-empty stripped string, got {name!r}")
        if name in self._items:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._items[name] = obj

    def register(self, name: str) -> Callable[[T], T]:
        """Decorator form of :meth:`add`."""

        def deco(obj: T) -> T:
            self.add(name, obj)
            return obj

        return deco

    def get(self, name: str) -> T:
        try:
            return self._items[name]
        except KeyError:
            raise VlmrobustError(self.unknown_message(name)) from None

    def unknown_message(self, name: str) -> str:
        close = difflib.get_close_matches(name, list(self._items), n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        known = ", ".join(sorted(self._items)) or "none"
        return f"unknown {self.kind} {name!r}{hint} (known: {known})"

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._items))

    def names(self) -> tuple[str, ...]:
        """The registered names in registration order (``iter`` sorts them)."""
        return tuple(self._items)

    def __len__(self) -> int:
        return len(self._items)
