"""MC-DEM as a model of the contact pipeline (``systems.contact.pipeline``, model interface).

Every geometry a ``MultiContact`` model is given to (pairs, walls, any rigid
object kind) sees the surfaces displaced by W (Brodu et al. 2015, Eq. (1);
``systems.multicontact.systems``), per contact c and side: W_i of the
particle and, where the partner is a particle, W_j of the partner (m,
outward along the centre line, positive toward the partner):

* the overlap test reaches W_i + W_j further: a pair whose deformed surfaces
  meet touches before the spheres do, and starts at zero force;
* the law sees the corrected overlap Delta = delta + W_i + W_j and the radii
  r_i + W_i, r_j + W_j (its lever arms r + W - Delta/2 put the contact point
  at the mean of the two deformed surfaces), R* of the undeformed spheres;
* each contact's normal force ``fn`` (N, 0 when not touching) and the W used
  (``offset``) are recorded: the next step's Eq. (1) uses them (the scheme
  lags the forces by one step);
* a contact that begins on a candidate new to the neighbour list
  (``listed`` 0) while the undeformed bodies do not overlap is one the list
  missed: an event (``late_contacts``). Rigid objects have no such list
  (``listed`` of size 0).

With W = 0 every value, and the order in which forces are added into each
row, are the plain pipeline's: gamma = 0 gives the independent-contact forces
bit for bit. ``M`` is ``(surface, normal_force, offset, listed)``: surface and
offset (contacts, 2) for a particle partner, (contacts, 1) for a rigid one.
"""
from __future__ import annotations

from ecs_dem.generated_kernels import template

from ecs_dem.systems.contact.chunks import CHUNK

#: the model moves the surfaces; its two scratch columns hold W_i and W_j
MODEL_OFFSETS = True
MODEL_COLUMNS = 2


@template("inline")
def model_reach(c, M):
    surface = M[0]
    if PARTNER_IS_PARTICLE:  # noqa: F821 (the geometry's)
        return surface[c, 0] + surface[c, 1]
    return surface[c, 0]


@template("inline")
def model_visit(c, M):
    surface, normal_force, offset, listed = M
    normal_force[c] = 0.0
    for side in range(surface.shape[1]):
        offset[c, side] = surface[c, side]
    if listed.size:
        listed[c] = 1


@template("inline")
def model_began(q, c, G, M):
    listed = M[3]
    if listed.size and listed[c] == 0 and touches(q, c, G, 0.0) == 0:  # noqa: F821
        return 1
    return 0


@template("inline")
def model_gather(buf, t, c, M):
    surface = M[0]
    C = CHUNK
    buf[MODEL_COLUMN * C + t] = surface[c, 0]  # noqa: F821 (the pipeline's column)
    if PARTNER_IS_PARTICLE:  # noqa: F821
        buf[(MODEL_COLUMN + 1) * C + t] = surface[c, 1]  # noqa: F821
    else:
        buf[(MODEL_COLUMN + 1) * C + t] = 0.0  # noqa: F821


@template("inline")
def model_offsets(buf, t):
    C = CHUNK
    return buf[MODEL_COLUMN * C + t], buf[(MODEL_COLUMN + 1) * C + t]  # noqa: F821


@template("inline")
def model_record(buf, t, c, M):
    M[1][c] = buf[_FN * CHUNK + t]  # noqa: F821 (the pipeline's column)
