"""Triaxial test with a flexible membrane (Goetz & Poeschel 2023, Sect. 3.1, Tables 2-4, Fig. 5).

A cylindrical sample of grains inside a rubber membrane between two rigid
platens is confined by the membrane's stress sigma_c and by the servo-driven
top platen, held until equilibrium, then loaded axially by the top platen at
``platen_speed`` with the confining stress held, to ``max_strain``.

    python -m ecs_dem.run.triaxial                  # small sample (the default), a few minutes
    python -m ecs_dem.run.triaxial --case 1         # the paper's case 1 (h0 100 mm, R 25 mm)
    python -m ecs_dem.run.triaxial --case 1 --model particle
    mpiexec.mpich -n 2 .venv/bin/python -m ecs_dem.run.triaxial --case 2 --set seed=2
    python -m ecs_dem.run.triaxial --set confining_stress=50e3 --set max_strain=0.2

Cases: ``small`` (h 60 mm, R 15 mm, about 350 grains), ``1`` (100 mm,
25 mm, about 1,700 grains), ``2`` (140 mm, 35 mm, about 4,700 grains).
Models: ``patch`` (MSS_patch: grains touch the triangles; edge ``patch_edge``
= 4 mm) and ``particle`` (MSS_particle: grains touch the vertices as spheres
of ``vertex_radius`` = 0.67 mm; edge ``particle_edge`` = 1.33 mm).

Materials (Table 2): grains E = 4.6e10 Pa, nu = 0.245, mu = 0.25, radii
uniform in 2.3-2.7 mm; the paper gives no density or restitution: 2500
kg/m^3 (glass) and 0.5. Membrane E = 1.25 MPa, nu = 1/3, d = 0.3 mm,
mu = 1.2, damping ratio 0.15, k_el = 1e-3 N m, k_diss = 1e-4 N s in
MercuryDPM's bending convention (``bending="mercurydpm"``: docs/physics.md,
the paper's values most likely in it), density 1100 kg/m^3 (not given).
Grain-membrane pairs mix the two species by the Hertz-Mindlin law's rules
(mu the mean: 0.725). Platens are rigid walls of the grains' material. No
gravity (``gravity`` > 0 adds it: rho g h is about 2.5 % of sigma_c in
case 1). The membrane's end rings move with the platens and never touch
them. For MSS_particle the vertices lie a vertex radius outside the
grains' side surface (radius R + r_v), so both models hold the same
sample, and the membrane's stress is sigma_c R / (R + r_v), so that the
grains feel sigma_c. The vertex spheres do not spin (the membrane's vertices
have no rotational freedom): MSS_particle's grains feel the membrane's
friction as MSS_patch's do.

Time step: ``dt_fraction`` of the smallest grain's Rayleigh time (0.2:
5.8e-7 s), for both models (``particle_dt_fraction`` for MSS_particle,
the same by default). The paper's bending damping k_diss = 1e-4 N s on
MSS_particle's 1.33 mm triangles, integrated explicitly, would need
dt < 9.4e-8 s on the undeformed mesh and ever less as grains squeeze the
triangles (3.5e-8 s at 3.6 % axial strain on case 1): MembraneBending
limits each hinge's damper where the step cannot resolve it, which keeps it
stable at any dt (systems/membrane/bending.py, Time step). At 5.8e-7 s that
leaves MSS_particle's bending damping at 0.08 of the paper's on the
undeformed mesh (the paper's in full from 4.7e-8 s down, where
``particle_dt_fraction`` = 0.016).

Membrane stretch: in the shear band a grain presses into the membrane and
stretches single 4 mm triangles by 45 % at 14 % strain (case 1, seed 2);
``max_stretch`` = 2 lets elements reach twice their initial size (it sets
the ghost width; beyond it the run stops with an error naming the element).

Triangle collapse: the edge springs alone do not resist a vertex crossing
its opposite edge. Where the membrane, held by friction (mu 1.2) to grains
that approach each other, is compressed locally, MSS_particle's 1.33 mm
triangles are squeezed flat in their plane and invert (case 1 at 3.2 % and
5.4 % axial strain without a barrier). A barrier (systems/
membrane_area_barrier.py, not in the paper) pushes back on a triangle below
``collapse_threshold`` = 0.3 of its rest area with stiffness
``collapse_stiffness`` = 20 times E d (membrane_systems' general default, 4,
let a triangle in case 1's shear band through at 14.9 %; 20 and 40 reach
15 %). On MSS_particle's 0.5 mg vertices at 5.8e-7 s that is far from the
stable limit (omega dt below 0.1). Case 1's MSS_patch runs never squeezed a
triangle below 0.35 of its area; MSS_particle's barrier acts on a handful of
its 21,000 triangles at a time.

Preparation (``preparation.py`` beside this file): random insertion without
contacts, Lubachevsky-Stillinger growth in a rigid cylinder, overlaps
removed; cached per case and seed, shared by both models.

Clumps (``--set grain_shape=dimer``, or any shape of ``components.clumps.library``:
trimer, tetrahedron, flat, elongated, ellipsoid_stl; ``sphere`` is the default;
``grains`` stays the grain count): every grain is a rigid clump of that shape
whose volume-equivalent radius is the drawn radius, prepared as clumps (the
preparation's docstring: bounding spheres inserted, bodies grown and shrunk), in
random orientations. The pebbles touch the membrane and the platens as grains
do; the time step stays the spheres' (a clump is heavier than a sphere of its
pebble's size, so its contacts are slower). Run names end in ``_<shape>``.

Loading and measurement: ``control.py`` (phases, equilibrium criterion, how
each stress is measured). The curves and the case's summary: ``report.py``.

Outputs, in ``output/triaxial/`` (``<run>`` = ``<case>_<model>_seed<seed>``, and
``_<grain_shape>`` for clumps):
``<run>.csv`` (time series: phase, strain, stresses, volume, kinetic energy),
``<run>.h5`` + ``.xdmf`` (grains and the membrane surface, for ParaView),
``<run>.checkpoint.h5`` (continue with ``--set restart=...``), and, over all
runs of the case found there, ``<case>.png`` (sigma_d and eps_v against
eps, both models on one figure when both were run) and ``<case>_summary.csv``
(peak sigma_d, strain at peak, mobilised friction angle, dilatancy).
With ``--set cg_fields=true`` also ``<run>_cg.h5`` + ``.xdmf`` and ``<run>_cg.png``:
the coarse-grained stress and strain-rate fields of the sample at the end
(``fields.py`` beside this file), and the mean coarse-grained axial stress
against the platen stress.

SIGINT or SIGTERM (a batch system's notice) stops the test after the current
step and writes the checkpoint; during the preparation, which keeps none, it
stops with exit code 128 + the signal's number and writes no packing.

Bad input stops the run with ``error: ...`` and exit code 2 before anything is
prepared or written: an unknown key, a value outside its range (``RANGES``), an
unknown case or model (from ``--case``/``--model``, ``--set`` or the
``--config`` file, in that order of precedence), a time step above a stable
limit (lower ``dt_fraction``), a checkpoint that cannot be read or that belongs
to another run (``IDENTITY``: the sample, seed, membrane and loading must
agree; other keys may change and are listed). The files of an earlier run of
the same name stay as they were.

A run that breaks down (a membrane element collapsed or overstretched) prints
``error: ...`` and exits with code 3, keeping everything written so far; on
one rank it also writes the CSV and the case report. On several ranks the
engine ends every rank at once (``World.run``: the error is usually on one
rank only), and ``python -m ecs_dem.run.triaxial.report output/triaxial/<run>.h5``
writes them.
"""
from __future__ import annotations

import math
import sys
import time
from pathlib import Path

from ecs_dem import Box, InputError, UnstableTimeStepError, World
from ecs_dem.comm import default_comm
from ecs_dem.components.clumps.bodies import add_clumps
from ecs_dem.components.membranes import (add_membrane, membrane_ranges, membrane_vertices,
                                          set_stress)
from ecs_dem.components.mesh.generators import cylinder
from ecs_dem.components.particles import add_particles, attach_to_wall, create_particle_table
from ecs_dem.components.species import add_species, species_ranges
from ecs_dem.components.walls import add_wall
from ecs_dem.config import check_ranges
from ecs_dem.driver import run_driver
from ecs_dem.errors import ConfigValueError
from ecs_dem.memory import check_particle_count
from ecs_dem.runner import RUN_DEFAULTS, check_restart
from ecs_dem.systems.contact.pair_forces import ContactForces
from ecs_dem.systems.integration.gravity import Gravity
from ecs_dem.systems.contact.hertz_mindlin import HertzMindlinLaw
from ecs_dem.systems.membrane.systems import (SNAPSHOT_FIELDS, membrane_snapshot_writer,
                                             membrane_systems)
from ecs_dem.systems.neighbors.search import NeighborSearch
from ecs_dem.systems.membrane.patch_contacts import PatchContacts
from ecs_dem.systems.membrane.patch_search import PatchSearch
from ecs_dem.systems.contact.time_step import rayleigh_time
from ecs_dem.systems.integration.velocity_verlet import velocity_verlet
from ecs_dem.systems.walls.contacts import WallContacts
from ecs_dem.systems.walls.motion import WallMotion
from ecs_dem.systems.rigid_body import rigid_bodies
from ecs_dem.systems.rigid_body.output import body_snapshot_writer, particle_fields

from .control import BOTTOM, TOP, RadialLoad, TriaxialControl, create_state_table, is_done
from .fields import CG_DEFAULTS, CG_RANGES, sample_fields, write_sample_fields
from .preparation import (PREPARATION_DEFAULTS, PSD_DEFAULTS, SHAPE_DEFAULTS, grain_count,
                          grain_template, packing, packing_path, size_distribution)
from .report import write_case_report, write_run_csv

CASES = {
    "small": {"radius": 0.015, "height": 0.06, "solid_fraction": 0.55},
    "1": {"radius": 0.025, "height": 0.1, "solid_fraction": 0.58},
    "2": {"radius": 0.035, "height": 0.14, "solid_fraction": 0.58},
}
MODELS = ("patch", "particle")

DEFAULTS = {
    "case": "small",
    "model": "patch",
    "seed": 1,
    **SHAPE_DEFAULTS,               # grain_shape: sphere or a clump (docstring, Clumps)
    # sample (Table 2; density and restitution not in the paper)
    "radius_min": 2.3e-3, "radius_max": 2.7e-3,               # m
    "grain_modulus": 4.6e10, "grain_poisson": 0.245, "grain_friction": 0.25,
    "grain_density": 2500.0, "grain_restitution": 0.5,
    **CASES["small"],
    **PREPARATION_DEFAULTS,
    **PSD_DEFAULTS,
    # membrane (Table 2, Sect. 3.1)
    "membrane_modulus": 1.25e6, "membrane_poisson": 1 / 3, "membrane_thickness": 3e-4,
    "membrane_friction": 1.2, "membrane_density": 1100.0, "membrane_restitution": 0.5,
    "membrane_damping": 0.15, "bending_stiffness": 1e-3, "bending_damping": 1e-4,
    "bending": "mercurydpm",
    "patch_edge": 4e-3, "particle_edge": 1.33e-3, "vertex_radius": 0.67e-3,   # m
    # loading (Sect. 3.1)
    "confining_stress": 100e3,      # Pa
    "confine_ramp": 0.02,           # s, stress ramps from 0
    "equilibrium_tolerance": 0.01,  # of sigma_c, platens and felt stress
    "kinetic_tolerance": 1e-6,      # grains' kinetic energy over sigma_c V
    "equilibrium_checks": 3,        # consecutive records
    "confine_max": 0.1,             # s after the ramp
    "servo_gain": 2e-7,             # m/(s Pa)
    "servo_max_speed": 0.05,        # m/s
    "platen_speed": 0.05,           # m/s, v_p
    "max_strain": 0.15,             # ln(h0/h)
    "gravity": 0.0,                 # m/s^2
    "dt_fraction": 0.2,             # of the grains' Rayleigh time
    "particle_dt_fraction": 0.2,    # the same for MSS_particle (docstring, Time step)
    "skin": 0.25e-3,                # m
    "max_stretch": 2.0,             # longest a membrane element may get over its initial size
    "collapse_threshold": 0.3,      # area barrier acts below this fraction of the rest area
    "collapse_stiffness": 20.0,     # its stiffness over E d (0: the paper's model, no barrier)
    "sample_every": 200,            # steps between records
    "snapshot_every": 20000,        # steps between snapshots (0: none)
    "output_dir": "output/triaxial",
    **CG_DEFAULTS,                  # coarse-grained stress fields (fields.py), off by default
    **RUN_DEFAULTS,
    "checkpoint_every": 100000,
    "progress": False,
}


def run_name(cfg: dict) -> str:
    shape = "" if cfg["grain_shape"] == "sphere" else f"_{cfg['grain_shape']}"
    return f"{cfg['case']}_{cfg['model']}_seed{cfg['seed']}{shape}"


def add_grains(world, cfg: dict, pack: dict, species: int) -> None:
    """The packing's spheres as grains, or each as the bounding sphere of a clump of
    ``grain_shape`` in a random orientation (module docstring, Clumps)."""
    template = grain_template(cfg)
    if template is None:
        add_particles(world, pack["position"], pack["radius"], species)
        return
    add_clumps(world, template, pack["position"], pack["orientation"], species,
               scale=pack["scale"])


def choose_case_and_model(argv) -> tuple[dict, list[str]]:
    """The defaults for the case and the model, and the other arguments for load_config.

    Both are read, last one first, from ``--case``/``--model``, ``--set case=...``, and
    the ``--config`` file's ``case``/``model``: the case chooses the geometry's defaults
    before the rest of the configuration is read (a file that sets ``case = "1"`` runs case
    1's sample, under case 1's name)."""
    defaults, rest = dict(DEFAULTS), []
    args = list(sys.argv[1:] if argv is None else argv)
    chosen: dict[str, str] = {}
    k = 0
    while k < len(args):
        a = args[k]
        if a in ("--case", "--model"):
            if k + 1 == len(args) or args[k + 1].startswith("--"):
                raise InputError(f"{a} needs a value: " + (
                    "small, 1 or 2" if a == "--case" else "patch or particle"))
            chosen[a[2:]] = args[k + 1]
            k += 2
            continue
        if a == "--config" and k + 1 < len(args):
            for key, value in _case_and_model_in(args[k + 1]).items():
                chosen.setdefault(key, value)  # the command line wins over the file
        if a == "--set" and k + 1 < len(args) and args[k + 1].split("=")[0].strip() in ("case", "model"):
            key, value = args[k + 1].split("=", 1)
            chosen[key.strip()] = value.strip()
        rest.append(a)
        k += 1
    defaults.update(chosen)
    if defaults["case"] not in CASES:
        raise InputError(f"case {defaults['case']!r}: choose one of {sorted(CASES)}")
    if defaults["model"] not in MODELS:
        raise InputError(f"model {defaults['model']!r}: choose patch or particle")
    defaults.update(CASES[defaults["case"]])
    # last, so that they win over a --config file's case and model in load_config as here
    rest += ["--set", f"case={defaults['case']}", "--set", f"model={defaults['model']}"]
    return defaults, rest


def _case_and_model_in(path) -> dict:
    """``case`` and ``model`` as a TOML config file sets them (as text); {} if the file
    cannot be read (load_config then says why)."""
    import tomllib

    try:
        with open(path, "rb") as fh:
            values = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return {}
    return {key: str(values[key]) for key in ("case", "model") if key in values}


#: (key, lowest, highest, whether the bounds are included): the values a run can use
RANGES = (
    ("radius_min", 0.0, math.inf, False), ("radius_max", 0.0, math.inf, False),
    ("radius", 0.0, math.inf, False), ("height", 0.0, math.inf, False),
    ("solid_fraction", 0.0, 0.74, False), ("patch_edge", 0.0, math.inf, False),
    ("particle_edge", 0.0, math.inf, False), ("vertex_radius", 0.0, math.inf, False),
    ("confining_stress", 0.0, math.inf, False), ("confine_ramp", 0.0, math.inf, False),
    ("equilibrium_tolerance", 0.0, math.inf, False), ("kinetic_tolerance", 0.0, math.inf, False),
    ("equilibrium_checks", 1, math.inf, True), ("confine_max", 0.0, math.inf, False),
    ("servo_gain", 0.0, math.inf, False), ("servo_max_speed", 0.0, math.inf, False),
    ("platen_speed", 0.0, math.inf, False), ("max_strain", 0.0, 1.0, False),
    ("gravity", 0.0, math.inf, True), ("dt_fraction", 0.0, 1.0, False),
    ("particle_dt_fraction", 0.0, 1.0, False), ("skin", 0.0, math.inf, False),
    ("max_stretch", 1.0, math.inf, False), ("collapse_threshold", 0.0, 1.0, True),
    ("collapse_stiffness", 0.0, math.inf, True), ("sample_every", 1, math.inf, True),
    ("snapshot_every", 0, math.inf, True), ("checkpoint_every", 0, math.inf, True),
    ("seed", 0, math.inf, True), ("grains", 0, math.inf, True),
    *CG_RANGES,
    # the preparation (preparation.py)
    ("prep_start_scale", 0.0, 1.0, "(]"), ("prep_speed", 0.0, math.inf, True),
    ("prep_grow_time", 0.0, math.inf, False), ("prep_relax_time", 0.0, math.inf, True),
    ("psd_mean", 0.0, math.inf, True), ("psd_spread", 0.0, math.inf, True),
    # the materials, as add_species and add_membrane accept them, so that a bad one stops
    # the run before its sample is prepared, not after
    *species_ranges(grain_modulus="youngs_modulus", grain_poisson="poisson_ratio",
                    grain_friction="friction", grain_density="density",
                    grain_restitution="restitution", membrane_modulus="youngs_modulus",
                    membrane_poisson="poisson_ratio", membrane_friction="friction",
                    membrane_density="density", membrane_restitution="restitution",
                    prep_modulus="youngs_modulus", prep_restitution="restitution"),
    *membrane_ranges(membrane_thickness="thickness", membrane_damping="damping_ratio",
                     bending_stiffness="bending_stiffness", bending_damping="bending_damping"),
)

#: what a restart must share with its checkpoint (ecs_dem.runner.check_restart): the
#: sample, the membrane and the test; time step, output, equilibrium and stop criteria
#: may change (the run then departs from the uninterrupted one, and says so)
IDENTITY = ("case", "model", "seed", "grain_shape", "radius", "height", "solid_fraction", "grains",
            "radius_min", "radius_max", "psd", "psd_basis", "psd_mean", "psd_spread",
            "grain_modulus", "grain_poisson", "grain_friction",
            "grain_density", "grain_restitution", "membrane_modulus", "membrane_poisson",
            "membrane_thickness", "membrane_friction", "membrane_density",
            "membrane_restitution", "membrane_damping", "bending_stiffness", "bending_damping",
            "bending", "patch_edge", "particle_edge", "vertex_radius", "confining_stress",
            "confine_ramp", "platen_speed", "gravity")


#: the least solid fraction of a sample: random loose packing is about 0.55
MIN_SOLID_FRACTION = 0.3


def check_sample(cfg: dict) -> None:
    """ConfigValueError naming the first key whose value no run can use (RANGES, and
    radius_max not below radius_min; printed once on many ranks), before anything is
    prepared or written; an InputError when the grains cannot fit in memory."""
    check_ranges(cfg, RANGES)
    grain_template(cfg)
    if cfg["radius_max"] < cfg["radius_min"]:
        raise ConfigValueError(f"config key 'radius_max' = {cfg['radius_max']!r} is below "
                               f"radius_min = {cfg['radius_min']!r}")
    if cfg["radius"] < 2 * cfg["radius_max"] or cfg["height"] < 4 * cfg["radius_max"]:
        raise ConfigValueError(
            f"the sample (radius {cfg['radius']!r} m, height {cfg['height']!r} m) is too small "
            f"for grains of radius up to {cfg['radius_max']!r} m: it needs two grains across "
            "and two above each other (radius >= 2 radius_max, height >= 4 radius_max)")
    a, b = cfg["radius_min"], cfg["radius_max"]
    psd = size_distribution(cfg)
    if psd is not None:
        grain_volume = psd.mean_volume()
    else:
        grain_volume = math.pi / 3 * (b**4 - a**4) / (b - a) if b > a else 4 / 3 * math.pi * a**3
    filled = grain_count(cfg) * grain_volume / (math.pi * cfg["radius"] ** 2 * cfg["height"])
    if filled < MIN_SOLID_FRACTION:
        raise ConfigValueError(
            f"{grain_count(cfg)} grains fill {100 * filled:.3g} % of the sample: below "
            f"{100 * MIN_SOLID_FRACTION:g} % the membrane collapses onto a loose heap instead "
            "of confining a sample; use more grains (grains=0 takes them from solid_fraction)")
    check_particle_count(grain_count(cfg), default_comm(), "grains")
    # the mesh's own checks (too fine for the memory, too coarse for the sample) now, not
    # after minutes of preparation: the defaults' mesh takes milliseconds
    sleeve_mesh(cfg)


def sleeve_mesh(cfg: dict):
    """The membrane's surface: a cylinder of the sample's radius (MSS_particle's a vertex
    radius wider) and height, of the model's edge length."""
    particle_model = cfg["model"] == "particle"
    offset = cfg["vertex_radius"] if particle_model else 0.0
    edge = cfg["particle_edge"] if particle_model else cfg["patch_edge"]
    return cylinder(cfg["radius"] + offset, cfg["height"], edge)


def build_world(cfg: dict, pack: dict, output=None, comm=None, log=print):
    """The test world from a prepared packing; returns (world, control)."""
    R, h = cfg["radius"], cfg["height"]
    particle_model = cfg["model"] == "particle"
    offset = cfg["vertex_radius"] if particle_model else 0.0
    fraction = cfg["particle_dt_fraction"] if particle_model else cfg["dt_fraction"]
    dt = fraction * float(rayleigh_time(cfg["radius_min"], cfg["grain_density"],
                                                   cfg["grain_modulus"], cfg["grain_poisson"]))
    world = World(Box((-2 * R, -2 * R, -0.05 * h), (2 * R, 2 * R, 1.05 * h)), dt=dt,
                  skin=cfg["skin"], comm=comm, seed=cfg["seed"])
    grain = add_species(world, youngs_modulus=cfg["grain_modulus"], poisson_ratio=cfg["grain_poisson"],
                        density=cfg["grain_density"], restitution=cfg["grain_restitution"],
                        friction=cfg["grain_friction"])
    rubber = add_species(world, youngs_modulus=cfg["membrane_modulus"],
                         poisson_ratio=cfg["membrane_poisson"], density=cfg["membrane_density"],
                         restitution=cfg["membrane_restitution"], friction=cfg["membrane_friction"])
    create_particle_table(world)
    sleeve = add_membrane(
        world, sleeve_mesh(cfg), youngs_modulus=cfg["membrane_modulus"],
        poisson_ratio=cfg["membrane_poisson"], thickness=cfg["membrane_thickness"],
        density=cfg["membrane_density"], damping_ratio=cfg["membrane_damping"],
        bending_stiffness=cfg["bending_stiffness"], bending_damping=cfg["bending_damping"],
        bending=cfg["bending"], contact=cfg["model"],
        vertex_radius=cfg["vertex_radius"] if particle_model else None, species=rubber)
    add_grains(world, cfg, pack, grain)
    add_wall(world, (0, 0, 0), (0, 0, 1), species=grain)
    add_wall(world, (0, 0, h), (0, 0, -1), mode="servo", species=grain, area=math.pi * R**2,
             servo_gain=cfg["servo_gain"], max_speed=cfg["servo_max_speed"])
    tol = 1e-6 * h
    attach_to_wall(world, membrane_vertices(world, sleeve, where=lambda x: x[:, 2] < tol), BOTTOM)
    attach_to_wall(world, membrane_vertices(world, sleeve, where=lambda x: x[:, 2] > h - tol), TOP)
    set_stress(world, sleeve, cfg["confining_stress"] * R / (R + offset), ramp=(0.0, cfg["confine_ramp"]))
    create_state_table(world)

    law = HertzMindlinLaw()
    contact_load = RadialLoad("contacts", cfg["sample_every"])
    pressure_load = RadialLoad("contacts and confining stress", cfg["sample_every"])
    control = TriaxialControl(cfg, contact_load, pressure_load, offset, output, log)
    stretching, barrier, bending, pressure = membrane_systems(
        max_stretch=cfg["max_stretch"], collapse_threshold=cfg["collapse_threshold"],
        collapse_stiffness=cfg["collapse_stiffness"])
    first, second = velocity_verlet()
    contacts = [ContactForces(law)]
    if not particle_model:
        contacts = [PatchSearch(), *contacts, PatchContacts(law)]
    forces = [Gravity((0, 0, -cfg["gravity"]))] if cfg["gravity"] > 0 else []
    bodies = rigid_bodies() if "bodies" in world.tables else []
    for s in (WallMotion(), *bodies, first, NeighborSearch(), *contacts, WallContacts(law), *forces,
              contact_load, pressure, pressure_load, stretching, barrier, bending, second, control):
        world.add_system(s)
    if cfg["cg_fields"]:
        world.add_system(sample_fields(cfg, world, 0.0, h))
    if output is not None and cfg["snapshot_every"] > 0:
        world.add_system(membrane_snapshot_writer(output, cfg["snapshot_every"],
                                                  particle_fields(world, SNAPSHOT_FIELDS)))
        if bodies:
            world.add_system(body_snapshot_writer(output, cfg["snapshot_every"]))
    return world, control


def run_triaxial(job) -> int:
    cfg = job.cfg
    job.on_stop = lambda: "no packing written (the next run prepares it again)"
    directory = Path(cfg["output_dir"])
    name = run_name(cfg)
    h5, csv_path = directory / f"{name}.h5", directory / f"{name}.csv"
    # checks the path, opens nothing: the file is written from the first record on, so an
    # input error until then leaves an earlier run's files as they were
    output = job.open_output(h5, checkpoint_beside=True)
    # a run that broke down on one rank (several: World.run ended them): the curves to the
    # stop, from what the file holds
    job.on_breakdown = lambda: output.opened and job.write(
        write_curves, h5, csv_path, cfg, job.print, "  the curves to the stop: ")
    if cfg["restart"]:  # before a packing is prepared for a run that cannot continue
        check_restart(cfg["restart"], cfg, IDENTITY, log=lambda *a: None)
    try:
        pack = packing(cfg, packing_path(cfg, directory), job.comm, job.print)
        job.print(f"triaxial {name}: {pack['radius'].size} grains, solid fraction "
                  f"{pack['solid_fraction']:.4f} (radii scaled by {pack['shrink']:.5f} to remove "
                  "the preparation's overlaps)")
        if pack["shrink"] < 0.99:
            job.print("  warning: the preparation overlapped by more than 1 %: solid_fraction is "
                      "above jamming for this cylinder; lower it for grains closer to their radii")
        t0 = time.perf_counter()
        with output:
            world, control = build_world(cfg, pack, output, job.comm, job.print)
            shear_time = cfg["height"] * (1 - math.exp(-cfg["max_strain"])) / cfg["platen_speed"]
            limit = int(math.ceil(1.5 * (cfg["confine_ramp"] + cfg["confine_max"] + shear_time)
                                  / world.dt))
            job.print(f"  dt = {world.dt:.3g} s, membrane {cfg['model']}, "
                      f"sigma_c = {cfg['confining_stress'] / 1e3:g} kPa")
            status = job.run_world(world, limit, until=is_done, check_every=cfg["sample_every"],
                                   identity=IDENTITY)
            elapsed = time.perf_counter() - t0
            if world.stop_requested:
                return status
            if not is_done(world):
                job.print(f"  the run reached its step limit ({limit}) before max_strain")
    except UnstableTimeStepError as exc:  # name the key that sets the step here
        key = "particle_dt_fraction" if cfg["model"] == "particle" else "dt_fraction"
        raise UnstableTimeStepError(f"{exc}\n  here: lower {key} (now {cfg[key]:g}, a fraction "
                                    "of the grains' Rayleigh time)") from None
    job.write(write_curves, h5, csv_path, cfg, job.print,
              f"done in {elapsed:.1f} s ({world.step - world.first_step} steps): ",
              f", {h5.with_suffix('.xdmf')} (ParaView)")
    if cfg["cg_fields"]:
        fields = next(s for s in world.systems if hasattr(s, "window_steps"))
        if fields.fields:
            for line in job.write(write_sample_fields, fields, control.records,
                                  directory / f"{name}_cg", h5) or ():
                job.print(line)
        else:
            job.print("  no coarse-grained fields: the run ended before their first evaluation")
    return 0


def main(argv=None) -> int:
    return run_driver(argv, defaults=choose_case_and_model, check=check_sample, run=run_triaxial,
                      description=__doc__.splitlines()[0]
                      + " (--case small|1|2, --model patch|particle)", soft_kill=True,
                      prog="python -m ecs_dem.run.triaxial")


def write_curves(h5: Path, csv_path: Path, cfg, log, before: str, after: str = "") -> None:
    """The run's CSV and its case's summary and plots, from its HDF5 file; a disk without
    room for them says how to write them later instead of ending in a traceback. Not
    collective (rank 0 writes them: ``Job.write``)."""
    try:
        log(f"{before}{write_run_csv(h5, csv_path)}{after}")
        for line in write_case_report(csv_path.parent, cfg["case"], cfg["confining_stress"]):
            log(line)
    except OSError as exc:
        log(f"  the curves could not be written ({exc.strerror or exc}): make room, then "
            f"python -m ecs_dem.run.triaxial.report {h5} --sigma-c {cfg['confining_stress']:g}")
