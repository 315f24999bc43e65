"""Physics systems: numba kernels plus thin System classes that declare their data use.

Installed as ``ecs_dem.systems`` (the folder ``systems/``), one subpackage per topic::

    contact           contact laws (Hertz-Mindlin, linear, saturated), the contact pipeline
                      every geometry runs on, pair contact forces, the contact tables
    neighbors         the neighbour search (linked cells, Verlet lists)
    walls             planar walls: contacts and motion
    membrane          Goetz-Poeschel membranes: springs, bending, pressure, area barrier,
                      patch contacts (MSS_patch) and their search
    multicontact      MC-DEM (Brodu et al. 2015)
    integration       velocity Verlet and gravity
    diagnostics       energies and other observables

Modules that lived directly in ``systems/`` before this layout still import under their
old names (``ecs_dem.systems.hertz_mindlin`` is ``ecs_dem.systems.contact.hertz_mindlin``):
``MOVED`` below maps each to its place.
"""
from ecs_dem.module_aliases import alias_modules

#: old module name -> its module in the subpackages (both import the same module)
MOVED = {
    "contact_law": "contact.law",
    "contact_chunks": "contact.chunks",
    "contact_forces": "contact.pair_forces",
    "contact_geometry": "contact.kinematics",
    "contact_table": "contact.table",
    "hertz_mindlin": "contact.hertz_mindlin",
    "hertz_saturated": "contact.hertz_saturated",
    "linear_spring_dashpot": "contact.linear_spring_dashpot",
    "time_step": "contact.time_step",
    "neighbor_search": "neighbors.search",
    "neighbor_kernels": "neighbors.kernels",
    "wall_contacts": "walls.contacts",
    "wall_motion": "walls.motion",
    "bonded_springs": "membrane.springs",
    "membrane_bending": "membrane.bending",
    "membrane_pressure": "membrane.pressure",
    "membrane_area_barrier": "membrane.area_barrier",
    "membrane_diagnostics": "membrane.diagnostics",
    "membrane_systems": "membrane.systems",
    "patch_contacts": "membrane.patch_contacts",
    "patch_contact_kernels": "membrane.patch_kernels",
    "patch_geometry": "membrane.patch_geometry",
    "patch_search": "membrane.patch_search",
    "patch_vertex_sharing": "membrane.vertex_sharing",
    "triangle_geometry": "membrane.triangle",
    "velocity_verlet": "integration.velocity_verlet",
    "gravity": "integration.gravity",
}
alias_modules(__name__, MOVED)
