"""Planar walls: their contacts with particles (any contact law) and their motion (velocity,
servo)."""
