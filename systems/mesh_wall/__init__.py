"""Triangulated (mesh) walls: rigid surfaces from CAD files, and their wear (``wear``)."""
