"""Wet snapshots: films per particle, bridges as lines between the right particles, droplets
as points, and an XDMF sidecar whose grids point at datasets of the file."""
import xml.etree.ElementTree as ET

import h5py
import numpy as np

from ecs_dem import Box, World
from ecs_dem.components.droplets import add_nozzle
from ecs_dem.components.particles import add_particles
from ecs_dem.components.species import add_species
from ecs_dem.components.wet import add_liquid
from ecs_dem.io.hdf5_output import Hdf5Output
from ecs_dem.systems.contact.linear_spring_dashpot import LinearSpringDashpotLaw
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.wet.droplets import spray
from ecs_dem.systems.wet.laws import LiquidMigrationWillet
from ecs_dem.systems.wet.migration import liquid_migration
from ecs_dem.systems.wet.output import WetSnapshots

R = 1e-3


def test_bridges_are_lines_between_their_particles_and_droplets_points(tmp_path):
    world = World(Box((-0.02,) * 3, (0.02,) * 3), dt=2e-6, skin=1e-4)
    add_species(world, youngs_modulus=1e7, poisson_ratio=0.3, density=2500.0)
    # a chain of three touching particles (two bridges) and a loose one
    pos = [[0, 0, 0], [1.99 * R, 0, 0], [3.98 * R, 0, 0], [0, 0.01, 0]]
    add_particles(world, pos, R)
    add_liquid(world, [1e-11, 2e-11, 3e-11, 4e-11])
    add_nozzle(world, [0, -0.01, 0.01], [0, 0, -1], droplet_radius=5e-5, speed=0.5,
               rate=1e5)
    law = LiquidMigrationWillet(LinearSpringDashpotLaw(kn=1e3, gamman=0.0, friction=0.0),
                                max_bridge_volume=1e-10)
    contacts = ContactForces(law)
    out = Hdf5Output(tmp_path / "wet.h5", comm=world.comm)
    first, second = velocity_verlet()
    for s in (first, NeighborSearch(), *spray(), *liquid_migration(contacts), contacts,
              second, WetSnapshots(out, every=50)):
        world.add_system(s)
    world.run(100)
    out.close()
    pairs = world.pairs
    held = pairs.bridge_volume[:, 0] > 0
    bridges = {(int(a), int(b)): float(v) for a, b, v in
               zip(pairs.gid_i[held], pairs.gid_j[held], pairs.bridge_volume[held, 0])}
    assert len(bridges) == 2
    with h5py.File(tmp_path / "wet.h5") as f:
        g = f["snapshots/000000100"]
        gid = g["gid"][:]
        got = {tuple(sorted((int(gid[a]), int(gid[b])))): float(v)
               for (a, b), v in zip(g["lines"][:], g["line_bridge_volume"][:])}
        assert got == bridges
        p = world.particles
        film = dict(zip(p.gid.tolist(), p.liquid_film.tolist()))
        assert {int(k): float(v) for k, v in zip(gid, g["liquid_film"][:])} == film
        d = world.tables["droplets"]
        assert g["droplets/position"].shape == (d.n_owned, 3) and d.n_owned > 5
        np.testing.assert_array_equal(g["droplets/position"][:], d.position)
        root = ET.parse(tmp_path / "wet.xdmf").getroot()
        collections = {c.get("Name"): c for c in root.iter("Grid")
                       if c.get("GridType") == "Collection"}
        assert set(collections) == {"particles", "lines", "droplets"}
        kinds = {name: {t.get("TopologyType") for t in c.iter("Topology")}
                 for name, c in collections.items()}
        assert kinds == {"particles": {"Polyvertex"}, "lines": {"Polyline"},
                         "droplets": {"Polyvertex"}}
        line = [t for t in collections["lines"].iter("Topology")][-1]
        assert line.get("NodesPerElement") == "2" and line.get("NumberOfElements") == "2"
        names = {a.get("Name") for a in collections["lines"].iter("Attribute")}
        assert "bridge_volume" in names and "liquid_film" in names
        for item in root.iter("DataItem"):
            path = item.text.split(":", 1)[1]
            assert path in f, path
            assert list(f[path].shape) == [int(x) for x in item.get("Dimensions").split()]
