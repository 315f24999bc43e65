"""Rigid mesh walls (components.mesh_walls): their contacts with grains (any contact law, the
Table 1 selection of membrane patches), the candidate search, their prescribed motion, and the
wear of their surface (``wear``)."""
