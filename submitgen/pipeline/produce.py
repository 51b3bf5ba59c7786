"""Stage 2: produce the code objects the submission embeds, each read (parsed) once: every front
end (``pipeline/frontends/``: prebuilt ``--co`` objects, the compiled device sources, Triton) in
its order, each giving the objects of its inputs and the launch names they serve."""

from __future__ import annotations

from submitgen.pipeline.frontends import front_ends
from submitgen.pipeline.values import EmbeddedObject, Prepared


def produce_objects(p: Prepared) -> tuple[EmbeddedObject, ...]:
    return tuple(obj for front_end in front_ends() for obj in front_end.objects(p))
