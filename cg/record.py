"""Per-contact forces for coarse-graining: the contact pipeline with a recording scatter.

A template module (``ecs_dem.generated_kernels``) compiled after a contact geometry
(``systems.contact.pair_geometry`` or ``systems.contact.rigid_objects``, passed to
``contact_kernels`` as an extra template module) so that its ``begin`` and ``scatter``
replace the geometry's: nothing is added into force or torque rows; instead, for every
touching candidate q, row q of the record array (the last item of the geometry tuple ``G``)
receives (fx, fy, fz, dx, dy, dz, 1): the law's force on i and the vector d from the
partner's reference point to i's centre (columns 0-2 of both geometries' gather: x_i - x_j
for a pair, h n from the surface for a rigid object). Candidates not touching keep their
record (zero it before the call). Compile it as the geometry, with the recorded
geometry (and its shape) as extra template modules:
``contact_kernels(record, function, None, (*shape, geometry))``.
"""
from __future__ import annotations

from ecs_dem.generated_kernels import template
from ecs_dem.jit import row

from ecs_dem.systems.contact import pair_geometry as _pairs
from ecs_dem.systems.contact import rigid_objects as _rigid
from ecs_dem.systems.contact.chunks import CHUNK as RECORD_CHUNK

#: scratch columns before the pipeline's outputs: the most any recorded geometry gathers
#: (a geometry that gathers fewer leaves the rest unused)
GEOMETRY_COLUMNS = max(_pairs.GEOMETRY_COLUMNS, _rigid.GEOMETRY_COLUMNS)


@template("inline")
def begin(G):
    """Nothing: no force rows to zero."""
    return


@template("inline")
def scatter(buf, t, q, c, G):
    """The force on i and the separation vector d of column t into row q of the record."""
    C = RECORD_CHUNK
    rec = G[-1]
    k = row(q)
    rec[k, 0] = buf[_FX * C + t]  # noqa: F821 (the pipeline's columns)
    rec[k, 1] = buf[_FY * C + t]  # noqa: F821
    rec[k, 2] = buf[_FZ * C + t]  # noqa: F821
    rec[k, 3] = buf[t]           # d: columns 0, 1, 2 of the geometry's gather
    rec[k, 4] = buf[C + t]
    rec[k, 5] = buf[2 * C + t]
    rec[k, 6] = 1.0
