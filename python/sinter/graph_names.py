"""Names in a graph under construction, shared by the importers: the first free name of a family
(base, base_1, base_2, ...), and moving a tensor off a name the importer wants to give out."""

from __future__ import annotations

from typing import Callable


def first_free(base: str, taken: Callable[[str], bool]) -> str:
    """`base`, or `base_1`, `base_2`, ...: the first for which `taken` is false."""
    name, k = base, 1
    while taken(name):
        name, k = f"{base}_{k}", k + 1
    return name


def move_aside(g, name: str):
    """Renames the tensor of `g` named `name`, if any, to the first free `name_k`, so that `name`
    can be given to another tensor; returns the tensor moved (or None)."""
    holder = g.find_tensor(name)
    if holder is not None:
        k = 1
        while g.find_tensor(f"{name}_{k}") is not None:
            k += 1
        g.rename(holder, f"{name}_{k}")
    return holder
