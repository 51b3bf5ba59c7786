"""The emitted file's text: templates, their typed context, embedded objects, hoisted imports and the
provenance line."""
