"""Time integration (velocity Verlet) and body forces (gravity)."""
