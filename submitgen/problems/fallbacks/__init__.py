"""Pure-torch fallbacks, one module per problem. Each module's whole source is pasted into the
submissions of its problem, so it imports only what a submission may (torch, the standard library)
and names everything it defines with the ``_sg_`` prefix; its entry point is ``_sg_fallback(data)``."""
