"""The contact pipeline's default model: none (``systems.contact.pipeline``, model interface).

Every hook does nothing; with ``MODEL_OFFSETS`` and ``MODEL_COLUMNS`` false
the pipeline's calls to them compile away. ``M`` is an empty tuple.
"""
from __future__ import annotations

from ecs_dem.generated_kernels import template

#: the model shifts no surface and uses no scratch column
MODEL_OFFSETS = False
MODEL_COLUMNS = 0


@template("inline")
def model_reach(c, M):
    """No extra reach: the overlap test of the bodies as they are."""
    return 0.0


@template("inline")
def model_visit(c, M):
    return


@template("inline")
def model_began(q, c, G, M):
    return 0


@template("inline")
def model_gather(buf, t, c, M):
    return


@template("inline")
def model_offsets(buf, t):
    return 0.0, 0.0


@template("inline")
def model_record(buf, t, c, M):
    return
