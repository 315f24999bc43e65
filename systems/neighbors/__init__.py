"""The neighbour search: linked cells and Verlet lists with a skin, their history carry-over."""
