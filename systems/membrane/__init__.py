"""Goetz-Poeschel membranes: springs, bending, pressure, the area barrier, and the grain-patch
contacts of MSS_patch with their search."""
