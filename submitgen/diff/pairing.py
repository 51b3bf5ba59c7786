"""How ``submitgen diff`` decides what to compare: kernels of OLD with kernels of NEW, and the
arguments of one kernel with those of its counterpart.

Kernels: the ``--pair OLD=NEW`` pairs first, then equal names; when that pairs nothing and each
side has exactly one kernel left, those two. Arguments: equal names first (a name used once on
each side), then repeated names in order between those, then equal offset and kind, then what is
left in order and of the same kind (never two arguments whose names both live on elsewhere);
what still is left is an insertion (NEW only) or a removal (OLD only). A pair whose name, offset,
size or kind differs is a change; one whose offset alone differs has moved."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

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


def _unique_names(args: Sequence[ArgInfo]) -> dict[str, int]:
    counts = Counter(a.name for a in args if a.name)
    return {a.name: i for i, a in enumerate(args) if a.name and counts[a.name] == 1}


class _Names:
    """Whether an OLD and a NEW argument may be the same one: the same name, or names that do not
    live on elsewhere (an unnamed argument, or a rename: neither name is found on the other side)."""

    def __init__(self, old: Sequence[ArgInfo], new: Sequence[ArgInfo]):
        self.old = {a.name for a in old if a.name}
        self.new = {a.name for a in new if a.name}

    def compatible(self, a: ArgInfo, b: ArgInfo) -> bool:
        if a.name == b.name:
            return True
        return not (a.name in self.new or b.name in self.old)


def _pair_in_order(
    old: Sequence[ArgInfo], new: Sequence[ArgInfo], match: dict[int, int], names: _Names
) -> None:
    """Pair what is left, in order, by kind: an argument that only moved (a new offset)."""
    left = sorted(set(range(len(old))) - set(match.values()))
    for j, b in enumerate(new):
        if j in match or not left:
            continue
        lower = max((i for jj, i in match.items() if jj < j), default=-1)
        i = next((i for i in left if i > lower and old[i].value_kind == b.value_kind
                  and names.compatible(old[i], b)), None)
        if i is not None:
            match[j] = i
            left.remove(i)


def _pair_repeated_names(old: Sequence[ArgInfo], new: Sequence[ArgInfo], match: dict[int, int]) -> None:
    """Between two arguments already paired, pair the k-th use of a repeated name (``pad``) in OLD
    with its k-th use in NEW."""
    anchors = sorted(match.items()) + [(len(new), len(old))]
    prev_new, prev_old = -1, -1
    for j_end, i_end in anchors:
        if i_end <= prev_old:
            continue
        seen_old: dict[str, list[int]] = {}
        for i in range(prev_old + 1, i_end):
            if old[i].name:
                seen_old.setdefault(old[i].name, []).append(i)
        for j in range(prev_new + 1, j_end):
            free = seen_old.get(new[j].name or "")
            if j not in match and free:
                match[j] = free.pop(0)
        prev_new, prev_old = j_end, i_end


def pair_args(old: Sequence[ArgInfo], new: Sequence[ArgInfo]) -> tuple[ArgChange, ...]:
    """The differences between two explicit argument lists, in NEW's order (removals at the
    position they had in OLD)."""
    match: dict[int, int] = {}  # new index -> old index
    names = _Names(old, new)
    names_old, names_new = _unique_names(old), _unique_names(new)
    for name, j in names_new.items():
        if name in names_old:
            match[j] = names_old[name]
    _pair_repeated_names(old, new, match)
    taken = set(match.values())
    by_place: dict[tuple[int, str], list[int]] = {}
    for i, a in enumerate(old):
        if i not in taken:
            by_place.setdefault((a.offset, a.value_kind), []).append(i)
    for j, b in enumerate(new):
        free = [i for i in by_place.get((b.offset, b.value_kind), ()) if names.compatible(old[i], b)]
        if j not in match and free:
            match[j] = free[0]
            by_place[(b.offset, b.value_kind)].remove(free[0])
    _pair_in_order(old, new, match, names)
    out: list[ArgChange] = []
    for j, b in enumerate(new):
        a = old[match[j]] if j in match else None
        if a is None or (a.name, a.offset, a.size, a.value_kind) != (b.name, b.offset, b.size, b.value_kind):
            out.append(ArgChange(j, a, b))
    matched_old = set(match.values())
    out += [ArgChange(i, a, None) for i, a in enumerate(old) if i not in matched_old]
    out.sort(key=lambda c: (c.index, c.new is not None))
    return tuple(out)
