"""Input and output: LAMMPS data files in, HDF5 snapshots and time series out."""
