"""Wet granular matter: liquid films, liquid bridges, their forces and the migration of liquid."""
