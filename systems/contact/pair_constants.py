"""Per-pair contact constants: a species-pair table that overrides a law's mixing rules.

A contact law's parameters for a pair of materials come from its mixing rules
(Hertz-Mindlin: E* and G* from the compliance sums, restitution and friction
the arithmetic means; the linear law: the same constants for every pair). A
user who knows the constants of each pair (MercuryDPM's mixed species,
LAMMPS's ``pair_coeff i j``) states them instead, pair by pair::

    law = HertzMindlinLaw()
    law.set_pair(grain, rubber, estar=1.5e6, gstar=6e5, beta_n=0.13, beta_t=0.13, mu=0.5)
    law.set_pair(grain, RIGID, estar=1.1e7, mu=0.5)     # a wall without species

A pair is two species ids (``add_species``), in either order, or a species
and ``RIGID`` (the rigid material of walls without a species,
``systems.contact.law.rigid_material``). Constants not given keep the law's
mixed value. The names are the law's (``HertzMindlinLaw.PAIR_CONSTANTS``,
``LinearSpringDashpotLaw.PAIR_CONSTANTS``); every value must be finite and
not negative, and a stiffness the law divides by must be positive.

An *explicit* table (``explicit=True``, or ``law.set_pair(..., explicit=True)``
once) is one the user means to be complete: binding then refuses a pair the
world's contacts need (``needed_pairs``) that is missing, or that lacks one
of the law's required constants, and names the pair and the fix; pairs with
``RIGID`` may still be left to the mixing rules.

The table belongs to the law object; a contact system binds its law again at
the next step whenever the table changes (``systems.contact.law.LawBinding``),
as it does when a species constant changes.
"""
from __future__ import annotations

import math

import numpy as np

from ecs_dem.errors import InputError
from ecs_dem.observe import communicator

#: the partner material of a wall without species, in ``set_pair``
RIGID = "rigid"


def _material(value, what: str):
    if isinstance(value, str):
        if value == RIGID:
            return RIGID
        raise InputError(f"{what}: a pair names species ids (ints from add_species) or "
                         f"{RIGID!r} (got {value!r})")
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) \
            or value < 0:
        raise InputError(f"{what}: a pair names species ids (ints >= 0 from add_species) or "
                         f"{RIGID!r} (got {value!r})")
    return int(value)


def _key(a, b) -> tuple:
    """The pair (a, b) in a fixed order: species ids ascending, RIGID last."""
    if a == RIGID:
        a, b = b, a
    if b != RIGID and a != RIGID and b < a:
        a, b = b, a
    return a, b


def pair_text(key: tuple) -> str:
    return f"({key[0]}, {key[1]!r})" if key[1] == RIGID else f"({key[0]}, {key[1]})"


class PairConstants:
    """A law's per-pair constants (module docstring).

    ``names``: the constants a pair may set; ``required``: those an explicit table must give
    for every pair of species; ``positive``: those that must be > 0 (the others >= 0).
    ``version`` changes with every ``set``.
    """

    def __init__(self, law: str, names, required=(), positive=(), explicit: bool = False):
        self.law = law
        self.names = tuple(names)
        self.required = tuple(required)
        self.positive = frozenset(positive)
        self.explicit = bool(explicit)
        self.pairs: dict[tuple, dict[str, float]] = {}
        self.version = 0
        #: the species pairs an explicit table must give (None: every pair of species);
        #: ``systems.contact.law.LawBinding`` sets it from the world (``needed_pairs``)
        self.needed: set | None = None

    def set(self, a, b, **constants) -> None:
        """Set constants of the pair (a, b) (module docstring); others given before stay."""
        what = f"{self.law}.set_pair"
        key = _key(_material(a, what), _material(b, what))
        if key == (RIGID, RIGID):
            raise InputError(f"{what}: two rigid bodies never touch; give a species id")
        if not constants:
            raise InputError(f"{what}{pair_text(key)}: give at least one constant, of "
                             f"{', '.join(self.names)}")
        values = {}
        for name, value in constants.items():
            if name not in self.names:
                raise InputError(f"{what}{pair_text(key)}: unknown constant {name!r}; "
                                 f"{self.law} takes {', '.join(self.names)}")
            try:
                v = float(value)
            except (TypeError, ValueError):
                raise InputError(f"{what}{pair_text(key)}: {name} must be a number "
                                 f"(got {value!r})") from None
            if not math.isfinite(v) or v < 0 or (name in self.positive and v == 0):
                bound = "> 0" if name in self.positive else ">= 0"
                raise InputError(f"{what}{pair_text(key)}: {name} must be finite and {bound} "
                                 f"(got {value!r}); damping factors are magnitudes, the law "
                                 "makes the force oppose the motion")
            values[name] = v
        self.pairs.setdefault(key, {}).update(values)
        self.version += 1

    def __bool__(self) -> bool:
        return bool(self.pairs) or self.explicit

    def check(self, n_species: int) -> None:
        """Every pair names an existing species; an explicit table gives every pair of
        species with every required constant (module docstring)."""
        for key in self.pairs:
            for m in key:
                if m != RIGID and m >= n_species:
                    raise InputError(f"{self.law}: pair {pair_text(key)} names species {m}, but "
                                     f"there are {n_species} species (ids 0..{n_species - 1}); "
                                     "add the species first or correct the pair")
        if not self.explicit:
            return
        missing, incomplete = [], []
        needed = self.needed if self.needed is not None else {
            (a, b) for a in range(n_species) for b in range(a, n_species)}
        for a, b in sorted(needed):
            given = self.pairs.get((a, b))
            if given is None:
                missing.append(pair_text((a, b)))
            else:
                lack = [n for n in self.required if n not in given]
                if lack:
                    incomplete.append(f"{pair_text((a, b))} lacks {', '.join(lack)}")
        if missing or incomplete:
            parts = ([f"pairs {', '.join(missing)} are missing"] if missing else []) + incomplete
            raise InputError(f"{self.law}: the explicit pair table is incomplete: "
                             f"{'; '.join(parts)}. Give them with set_pair(a, b, "
                             f"{', '.join(f'{n}=...' for n in self.required)}), or let the "
                             "mixing rules fill the rest (explicit=False)")

    def apply(self, table: dict[str, np.ndarray], n_species: int) -> dict[str, np.ndarray]:
        """`table` (name -> (M + 1, M + 1) array of the mixed values, M = n_species, the last
        row and column the rigid material) with the given pairs written in, symmetrically.
        Returns a new dict; names absent from `table` are left out."""
        self.check(n_species)
        out = {name: np.array(values, dtype=np.float64) for name, values in table.items()}
        for (a, b), values in self.pairs.items():
            i = a
            j = n_species if b == RIGID else b
            for name, v in values.items():
                if name in out:
                    out[name][i, j] = v
                    out[name][j, i] = v
        return out

    def given(self, name: str, n_species: int) -> np.ndarray:
        """(M + 1, M + 1) bool: where the pair table gives `name`."""
        mask = np.zeros((n_species + 1, n_species + 1), dtype=bool)
        for (a, b), values in self.pairs.items():
            if name in values:
                j = n_species if b == RIGID else b
                mask[a, j] = mask[j, a] = True
        return mask


def needed_pairs(world) -> set:
    """The species pairs (a <= b) the world's contacts may meet: every pair of the species of
    particles that touch as spheres (not the vertices of patch membranes), each of these
    with the species of every patch membrane and of every wall with a species. Collective
    (every rank calls it: the particles are spread over the ranks)."""
    species = world.tables.get("species")
    m = species.n_owned if species is not None else 0
    present = np.zeros(m)
    if "particles" in world.tables:
        p = world.particles
        touching = p.species[p.contact_group != -2]
        present[touching[(touching >= 0) & (touching < m)]] = 1.0
    present = np.asarray(communicator(world).sum(present)) > 0 if m else present > 0
    spheres = np.flatnonzero(present)
    partners = set()
    if "membranes" in world.tables:
        mem = world.membranes
        partners |= {int(s) for s, model in zip(mem.species, mem.contact_model)
                     if model == 0 and s >= 0}
    if "walls" in world.tables:
        partners |= {int(s) for s in world.walls.species if s >= 0}
    needed = {(int(a), int(b)) for a in spheres for b in spheres if a <= b}
    needed |= {_key(int(a), b) for a in spheres for b in partners}
    return needed


class PairTableMixin:
    """``set_pair`` and ``pairs`` for a law class with ``PAIR_CONSTANTS``,
    ``PAIR_REQUIRED`` and ``PAIR_POSITIVE`` (module docstring)."""

    PAIR_CONSTANTS: tuple = ()
    PAIR_REQUIRED: tuple = ()
    PAIR_POSITIVE: tuple = ()
    pairs: PairConstants | None = None

    def pair_table(self, explicit: bool | None = None) -> PairConstants:
        """The law's pair table (made empty on first use); `explicit` sets whether it must
        be complete."""
        if self.pairs is None:
            self.pairs = PairConstants(self.name, self.PAIR_CONSTANTS, self.PAIR_REQUIRED,
                                       self.PAIR_POSITIVE)
        if explicit is not None:
            self.pairs.explicit = bool(explicit)
            self.pairs.version += 1
        return self.pairs

    def set_pair(self, a, b, explicit: bool | None = None, **constants):
        """Constants of the material pair (a, b), overriding the mixing rules (module
        docstring of systems.contact.pair_constants). Returns the law."""
        self.pair_table(explicit).set(a, b, **constants)
        return self


__all__ = ["RIGID", "PairConstants", "PairTableMixin", "needed_pairs", "pair_text"]
