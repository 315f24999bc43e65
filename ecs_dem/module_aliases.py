"""Old import paths of modules that moved into subpackages, kept working.

A package whose modules moved (``ecs_dem.systems``, ``ecs_dem.components``)
calls :func:`alias_modules` with a map from each old module name to its new
one; ``import ecs_dem.systems.hertz_mindlin`` then gives the module object of
``ecs_dem.systems.contact.hertz_mindlin`` itself (the same object under both
names, so its classes and kernels are not loaded twice), without a file at
the old place. The map is the one record of where a module went.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys


class _Aliases(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old names and loads them as the new modules."""

    def __init__(self):
        self.targets: dict[str, str] = {}

    def find_spec(self, fullname, path=None, target=None):
        if fullname in self.targets:
            return importlib.util.spec_from_loader(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(self.targets[spec.name])

    def exec_module(self, module):
        """Nothing to run: the new module was executed when it was imported."""


_FINDER = _Aliases()


def alias_modules(package: str, moved: dict[str, str]) -> None:
    """Make ``package.<old>`` import ``package.<new>`` for each ``old: new`` of `moved`."""
    _FINDER.targets.update({f"{package}.{old}": f"{package}.{new}" for old, new in moved.items()})
    if _FINDER not in sys.meta_path:
        sys.meta_path.append(_FINDER)


__all__ = ["alias_modules"]
