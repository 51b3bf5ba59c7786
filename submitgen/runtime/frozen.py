_SgReadOnly = type(type.__dict__)  # types.MappingProxyType, without an import


def sg_frozen(value):
    """A read-only copy of a TRITON table (dicts: read-only mappings, lists: tuples): the plan
    cannot change a tile size after the kernel was built for it."""
    if isinstance(value, dict):
        return _SgReadOnly({k: sg_frozen(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(sg_frozen(v) for v in value)
    return value
