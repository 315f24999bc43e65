"""Coarse-graining: continuum fields (density, velocity, stress, fabric) from particles.

``cg.kernels`` (the coarse-graining functions), ``cg.grid`` (where fields are evaluated),
``cg.fields`` (the fields from arrays of particles and contacts), ``cg.system`` (on the fly,
as a system of a World, on any number of ranks). See docs/user-guide/coarse-graining.md.
"""
