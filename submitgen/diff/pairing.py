"""How ``submitgen diff`` decides what to compare: kernels of OLD with kernels of NEW, and the
arguments of one kernel with those of its counterpart.

Kernels: the ``--pair OLD=NEW`` pairs first, then equal names; when that pairs nothing and each
side has exactly one kernel left, those two. Arguments: difflib's matching of (name, kind); within
a replaced run, arguments pair in order. A pair whose name, offset, size or kind differs is a
change; one whose offset alone differs has moved; what is left is inserted or removed."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

from submitgen.readers.base import ArgInfo


@dataclass(frozen=True)
class KernelPair:
    old: str
    new: str
    how: str  # "name" | "one-to-one" | "--pair"


@dataclass(frozen=True)
class ArgChange:
    index: int  # the argument's position in NEW (in OLD for a removal)
    old: ArgInfo | None
    new: ArgInfo | None

    @property
    def status(self) -> str:
        """``inserted``, ``removed``, ``moved`` (only the offset differs) or ``changed``."""
        if self.old is None:
            return "inserted"
        if self.new is None:
            return "removed"
        same = (self.old.name, self.old.size, self.old.value_kind) == (self.new.name, self.new.size,
                                                                       self.new.value_kind)
        return "moved" if same else "changed"


def pair_kernels(
    old: Sequence[str], new: Sequence[str], explicit: Sequence[tuple[str, str]] = ()
) -> tuple[list[KernelPair], tuple[str, ...], tuple[str, ...]]:
    """(pairs in NEW's order, NEW names left (added), OLD names left (removed))."""
    pairs = [KernelPair(o, n, "--pair") for o, n in explicit]
    used_old, used_new = {p.old for p in pairs}, {p.new for p in pairs}
    rest_old = [n for n in old if n not in used_old]
    rest_new = [n for n in new if n not in used_new]
    pairs += [KernelPair(n, n, "name") for n in rest_new if n in rest_old]
    if not pairs and len(rest_old) == 1 and len(rest_new) == 1:
        pairs.append(KernelPair(rest_old[0], rest_new[0], "one-to-one"))
    paired_old, paired_new = {p.old for p in pairs}, {p.new for p in pairs}
    order = {n: i for i, n in enumerate(new)}
    pairs.sort(key=lambda p: order.get(p.new, len(order)))
    return (pairs, tuple(n for n in new if n not in paired_new), tuple(n for n in old if n not in paired_old))


def pair_args(old: Sequence[ArgInfo], new: Sequence[ArgInfo]) -> tuple[ArgChange, ...]:
    """The differences between two explicit argument lists, in NEW's order (removals at the
    position they had in OLD)."""
    keys = [[(a.name, a.value_kind) for a in args] for args in (old, new)]
    out: list[ArgChange] = []
    for _, i0, i1, j0, j1 in SequenceMatcher(None, *keys, autojunk=False).get_opcodes():
        n = min(i1 - i0, j1 - j0)
        for i, j in zip(range(i0, i0 + n), range(j0, j0 + n)):
            a, b = old[i], new[j]
            if (a.name, a.offset, a.size, a.value_kind) != (b.name, b.offset, b.size, b.value_kind):
                out.append(ArgChange(j, a, b))
        out += [ArgChange(j, None, new[j]) for j in range(j0 + n, j1)]
        out += [ArgChange(i, old[i], None) for i in range(i0 + n, i1)]
    out.sort(key=lambda c: (c.index, c.new is not None))
    return tuple(out)
