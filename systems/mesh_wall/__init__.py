"""Rigid mesh walls (components.mesh_walls): their contacts with grains (any contact law, the
Table 1 selection of membrane patches), the candidate search, and their prescribed motion."""
