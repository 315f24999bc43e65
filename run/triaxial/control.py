"""Loading and measurement of the triaxial test: confinement, equilibrium, axial loading.

Quantities (SI; stresses compressive positive, as in soil mechanics)::

    h            platen gap (m), top platen z minus bottom platen z
    V            sample volume (m^3): the volume the membrane encloses between
                 the platens (membrane_measures), less the shell of the
                 vertex spheres for MSS_particle (the grains' side surface lies
                 a vertex radius r_v inside the vertices: V = pi (R_m - r_v)^2 h
                 with R_m = sqrt(V_membrane / (pi h)))
    A = V / h    mean cross-section (m^2): the lab's area correction
    sigma_top, sigma_bottom   normal force of the grains on each platen over A
    sigma_p      their mean; sigma_d = sigma_p - sigma_c
    sigma_felt   confining stress the grains feel: sigma_m C / P (R_m / R), with
                 C the radial contact force on the membrane's free vertices (the
                 forces after the contact systems) and P the inward radial force
                 the confining stress sigma_m puts on them (the forces after the
                 confining-stress system, less C), so that the membrane's own
                 springs and hinges, its inertia and the vertices held by the
                 platens are what makes it differ from sigma_m; R_m / R converts
                 from the vertices' surface to the grains' (MSS_particle)
    eps          axial strain ln(h0 / h) (Goetz & Poeschel Sect. 3.1), h0 the
                 gap when axial loading starts
    eps_v        volumetric strain (V0 - V) / V0 (compression positive;
                 negative is dilation)

Phases (one row of the replicated ``triaxial`` table holds them, so
checkpoints carry them)::

    CONFINE  the membrane's stress and the top platen's servo target ramp
             linearly from 0 to sigma_c over confine_ramp; the servo's area
             follows A. Equilibrium, checked at every record after the ramp:
             sigma_top (the servo's) within equilibrium_tolerance of sigma_c,
             sigma_bottom and sigma_felt changed by less than that since the last
             record,
             and the grains' kinetic energy below kinetic_tolerance sigma_c V,
             at equilibrium_checks consecutive records; or confine_max
             after the ramp (reported as not reached). sigma_felt is not held to
             sigma_c: the membrane's stiffness carries part of the stress (a few
             per cent here; the lab's membrane correction), and it is reported;
             nor is sigma_bottom: the grains' friction on the membrane, whose
             end rings the platens hold, carries part of the axial load.
    SHEAR    the top platen moves down at platen_speed; the membrane's stress
             is held; until eps reaches max_strain.
    DONE     the run ends.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem import observe
from ecs_dem.components.membranes import stress_at
from ecs_dem.errors import StateError
from ecs_dem.components.particles import KIND_GRAIN, KIND_MEMBRANE_VERTEX
from ecs_dem.components.walls import SERVO, VELOCITY
from ecs_dem.system import Stage, System
from ecs_dem.systems.diagnostics import kinetic_energy
from ecs_dem.systems.membrane.diagnostics import membrane_measures
from ecs_dem.table import Field, Halo, Table

CONFINE, SHEAR, DONE = 0, 1, 2
PHASE_NAMES = ("confine", "shear", "done")
BOTTOM, TOP = 0, 1

STATE_FIELDS = (
    Field("phase", np.int8, (), Halo.LOCAL, CONFINE, "", "0 confine, 1 shear, 2 done"),
    Field("stable", np.int32, (), Halo.LOCAL, 0, "", "consecutive records in equilibrium"),
    Field("equilibrium", np.int8, (), Halo.LOCAL, 0, "", "1 if confinement reached equilibrium"),
    Field("h0", np.float64, (), Halo.LOCAL, 0.0, "m", "gap when axial loading started"),
    Field("volume0", np.float64, (), Halo.LOCAL, 0.0, "m^3", "sample volume then"),
    Field("shear_start", np.float64, (), Halo.LOCAL, 0.0, "s", "time axial loading started"),
    Field("last_felt", np.float64, (), Halo.LOCAL, 0.0, "Pa", "sigma_felt at the last record"),
    Field("last_bottom", np.float64, (), Halo.LOCAL, 0.0, "Pa", "sigma_bottom at the last record"),
)


def create_state_table(world) -> Table:
    table = world.add_table(Table("triaxial", STATE_FIELDS, capacity=1))
    table.append(1)
    return table


class RadialLoad(System):
    """Sum over the free (not attached) membrane vertices of the radial force on them (N,
    outward from the z axis), as accumulated at this system's place in the schedule; every
    `every` steps. Two of them bracket the confining-stress system (module docstring)."""

    stage = Stage.FORCES
    reads = {"particles": ("force", "position", "kind", "fixed")}

    def __init__(self, label: str, every: int):
        self.label = label
        self.every = max(int(every), 1)
        self.radial = 0.0

    @property
    def name(self) -> str:
        return f"RadialLoad({self.label})"

    def run(self, world) -> None:  # the world runs it only every `every` steps
        p = world.particles
        n = p.n_owned
        free = (p.kind[:n] == KIND_MEMBRANE_VERTEX) & ~p.fixed[:n]
        x, f = p.position[:n][free], p.force[:n][free]
        rho = np.maximum(np.hypot(x[:, 0], x[:, 1]), 1e-300)
        self.radial = observe.total(world, (f[:, 0] * x[:, 0] + f[:, 1] * x[:, 1]) / rho)


class TriaxialControl(System):
    """Measure, record and drive the phases of the module docstring every `every` steps."""

    stage = Stage.OUTPUT
    reads = {"particles": ("position", "velocity", "mass", "kind", "radius", "membrane"),
             "membrane_triangles": ("rows", "membrane", "stress_work"),
             "membrane_boundaries": ("rows", "loop", "membrane"),
             "membrane_hinges": ("rows", "rest_angle", "membrane"),
             "springs": ("rows", "rest_length", "stiffness", "membrane"),
             "membranes": ("bending_stiffness", "bending_convention", "stress_start",
                           "stress_end", "ramp_start", "ramp_end"),
             "walls": ("point", "force")}
    reads_ghosts = {"particles": ("position",)}
    writes = {"walls": ("target_stress", "area", "mode", "velocity"),
              "triaxial": ("phase", "stable", "equilibrium", "h0", "volume0", "shear_start",
                           "last_felt", "last_bottom")}

    def __init__(self, cfg: dict, contact_load: RadialLoad, pressure_load: RadialLoad,
                 vertex_offset: float, output=None, log=print):
        self.every = max(int(cfg["sample_every"]), 1)
        self.sigma_c = float(cfg["confining_stress"])
        self.ramp = float(cfg["confine_ramp"])
        self.tolerance = float(cfg["equilibrium_tolerance"])
        self.kinetic_tolerance = float(cfg["kinetic_tolerance"])
        self.checks = int(cfg["equilibrium_checks"])
        self.confine_max = float(cfg["confine_max"])
        self.speed = float(cfg["platen_speed"])
        self.max_strain = float(cfg["max_strain"])
        self.contact_load, self.pressure_load = contact_load, pressure_load
        self.offset = float(vertex_offset)
        self.output = output
        self.log = log
        self.records: list[dict] = []
        self._next_report = 0.0
        self._escaped = 0  # grains outside the membrane at the last warning

    def measure(self, world) -> dict:
        """The quantities of the module docstring now (collective)."""
        p, w = world.particles, world.walls
        n = p.n_owned
        h = float(w.point[TOP, 2] - w.point[BOTTOM, 2])
        v_membrane = float(membrane_measures(world)["membrane_volume"][0])
        radius = math.sqrt(max(v_membrane, 0.0) / (math.pi * h)) - self.offset
        if not (radius > 0 and h > 0):  # replicated values: every rank stops here
            raise StateError(f"step {world.step}: the membrane encloses no sample (volume "
                             f"{v_membrane:.3g} m^3 between platens {h:.3g} m apart): it "
                             "collapsed or was crushed; use more grains, a lower confining "
                             "stress or a slower platen")
        volume = math.pi * radius**2 * h
        area = volume / h
        grain = p.kind[:n] == KIND_GRAIN
        kinetic = kinetic_energy(world, grain)
        x, r = p.position[:n][grain], p.radius[:n][grain]
        vertex = p.kind[:n] == KIND_MEMBRANE_VERTEX
        outer = observe.largest(world, np.hypot(p.position[:n, 0], p.position[:n, 1]),
                                where=vertex, empty=0.0)
        escaped = observe.count(world, (x[:, 2] < w.point[BOTTOM, 2] - r)
                                | (x[:, 2] > w.point[TOP, 2] + r)
                                | (np.hypot(x[:, 0], x[:, 1]) > outer + r))
        top, bottom = float(w.force[TOP, 2]), -float(w.force[BOTTOM, 2])
        sigma_m = float(stress_at(world.membranes, world.time)[0])
        contact = self.contact_load.radial
        pressure = contact - self.pressure_load.radial
        felt = sigma_m * contact / pressure * (radius + self.offset) / radius if pressure > 0 else 0.0
        return {"height": h, "volume": volume, "sample_radius": radius, "area": area,
                "force_top": top, "force_bottom": bottom,
                "sigma_top": top / area, "sigma_bottom": bottom / area,
                "sigma_p": 0.5 * (top + bottom) / area,
                "sigma_felt": felt, "sigma_membrane": sigma_m,
                "kinetic_energy": kinetic, "escaped": escaped}

    def run(self, world) -> None:
        state, w = world.tables["triaxial"], world.walls
        m = self.measure(world)
        phase = int(state.phase[0])
        target = self.sigma_c * min(world.time / self.ramp, 1.0) if self.ramp > 0 else self.sigma_c
        if phase == CONFINE:
            w.target_stress[TOP] = target
            w.area[TOP] = m["area"]
            if world.time >= self.ramp:
                errors = [abs(m["sigma_top"] - self.sigma_c),
                          abs(m["sigma_bottom"] - state.last_bottom[0]),
                          abs(m["sigma_felt"] - state.last_felt[0])]
                calm = m["kinetic_energy"] < self.kinetic_tolerance * self.sigma_c * m["volume"]
                ok = max(errors) < self.tolerance * self.sigma_c and calm
                state.stable[0] = state.stable[0] + 1 if ok else 0
                late = world.time - self.ramp > self.confine_max
                if state.stable[0] >= self.checks or late:
                    self.start_shear(world, m, reached=not late)
            state.last_felt[0], state.last_bottom[0] = m["sigma_felt"], m["sigma_bottom"]
        elif phase == SHEAR:
            strain = math.log(state.h0[0] / m["height"])
            if strain >= self.max_strain:
                state.phase[0] = DONE
        strain = math.log(state.h0[0] / m["height"]) if state.phase[0] != CONFINE else 0.0
        m.update(phase=int(state.phase[0]), sigma_c=target if phase == CONFINE else self.sigma_c,
                 strain=strain,
                 volumetric_strain=(1 - m["volume"] / state.volume0[0]) if state.volume0[0] else 0.0)
        m["sigma_d"] = m["sigma_p"] - m["sigma_c"]
        self.records.append({"step": world.step, "time": world.time, **m})
        if self.output is not None:
            self.output.append(world.step, world.time, m)
        if m["escaped"] > self._escaped:
            self.log(f"  warning: {m['escaped']} grain(s) outside the membrane at t = {world.time:.5g} s "
                     f"(strain {100 * strain:.2f} %): a grain pressed through the sheet (MSS_particle: "
                     "vertex spheres pushed apart; lower particle_edge, or use the patch model)")
        self._escaped = max(self._escaped, int(m["escaped"]))
        if state.phase[0] == SHEAR and strain >= self._next_report:
            self._next_report = strain + 0.01
            self.log(f"  strain {100 * strain:5.2f} %  sigma_d {m['sigma_d'] / 1e3:8.2f} kPa  "
                     f"eps_v {100 * m['volumetric_strain']:6.2f} %  felt {m['sigma_felt'] / 1e3:7.2f} kPa")

    def start_shear(self, world, m: dict, reached: bool) -> None:
        state, w = world.tables["triaxial"], world.walls
        state.phase[0] = SHEAR
        state.equilibrium[0] = int(reached)
        state.h0[0] = m["height"]
        state.volume0[0] = m["volume"]
        state.shear_start[0] = world.time
        w.mode[TOP] = VELOCITY
        w.velocity[TOP] = (0.0, 0.0, -self.speed)
        how = "equilibrium" if reached else f"NOT in equilibrium after confine_max = {self.confine_max} s"
        self.log(f"confinement at t = {world.time:.4f} s ({how}): sigma_top {m['sigma_top'] / 1e3:.2f}, "
                 f"sigma_bottom {m['sigma_bottom'] / 1e3:.2f}, felt {m['sigma_felt'] / 1e3:.2f} kPa "
                 f"(target {self.sigma_c / 1e3:.2f}); kinetic energy {m['kinetic_energy']:.3g} J; "
                 f"h0 = {1e3 * m['height']:.2f} mm, grains outside {m['escaped']}; axial loading at "
                 f"{self.speed} m/s")


def is_done(world) -> bool:
    return int(world.tables["triaxial"].phase[0]) == DONE


__all__ = ["CONFINE", "SHEAR", "DONE", "PHASE_NAMES", "BOTTOM", "TOP", "SERVO", "create_state_table",
           "RadialLoad", "TriaxialControl", "is_done"]
