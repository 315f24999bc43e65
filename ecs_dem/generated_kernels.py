"""Kernels specialised on a function, generated as source files so that numba caches them.

A kernel that calls a function it receives (a contact law inside a contact
loop) cannot be cached by numba: a jitted function passed as an argument,
or captured by a closure, keys the cache by object identity, so every run
compiles again (seconds per kernel). Copying the loop once per function
is what this module replaces.

Instead, a *template module* holds plain functions marked ``@template``
(the loop, its inline helpers) that call names they do not define (the
function and its constants). :func:`specialised_module` writes a small
module to disk that

* imports the template module's globals (helpers, constants),
* binds the missing names (``bindings``: importable objects or literals,
  and ``source``: further generated definitions),
* contains a copy of every ``@template`` function, decorated as a numba
  kernel or inline helper,

and imports it. numba caches the generated file like any other. Its text
carries a hash of the template module, of the bound objects' modules and of
the project modules these refer to, so editing any of them writes a new
file and recompiles, instead of loading stale machine code.

Files go to ``$ECS_DEM_KERNEL_DIR``, else ``$XDG_CACHE_HOME/ecs_dem/kernels``
(``~/.cache/ecs_dem/kernels``), else a folder in the temporary directory;
each is written only when its text changes (atomically, so ranks starting
together may race safely).
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import os
import sys
import tempfile
import textwrap
from pathlib import Path
from types import ModuleType

_MARK = "__ecs_dem_template__"
_modules: dict[str, ModuleType] = {}


def template(kind: str):
    """Mark a function of a template module: copied into each specialisation as a numba
    ``"kernel"`` (``ecs_dem.jit.kernel``) or ``"inline"`` helper (``ecs_dem.jit.inline``)."""
    if kind not in ("kernel", "inline"):
        raise ValueError(f"template kind must be 'kernel' or 'inline', not {kind!r}")

    def mark(fn):
        setattr(fn, _MARK, kind)
        return fn
    return mark


def kernel_dir() -> Path:
    """Folder of the generated files (module docstring)."""
    explicit = os.environ.get("ECS_DEM_KERNEL_DIR")
    if explicit:
        Path(explicit).mkdir(parents=True, exist_ok=True)
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    tag = f"py{sys.version_info[0]}{sys.version_info[1]}"
    for root in (Path(base) / "ecs_dem" / "kernels" / tag,
                 Path(tempfile.gettempdir()) / f"ecs_dem_kernels_{os.getuid()}" / tag):
        try:
            root.mkdir(parents=True, exist_ok=True)
            if os.access(root, os.W_OK):
                return root
        except OSError:
            continue
    raise OSError("no writable folder for generated kernels: set ECS_DEM_KERNEL_DIR")


def _project_modules(modules) -> list[ModuleType]:
    """The given modules and the ecs_dem modules their globals come from (one level)."""
    found = {m.__name__: m for m in modules}
    for m in modules:
        for value in vars(m).values():
            owner = value if isinstance(value, ModuleType) else inspect.getmodule(value)
            if owner is not None and owner.__name__.startswith("ecs_dem"):
                found.setdefault(owner.__name__, owner)
    return [found[k] for k in sorted(found)]


def _source_hash(modules) -> str:
    h = hashlib.sha1()
    for m in _project_modules(modules):
        path = getattr(m, "__file__", None)
        h.update(m.__name__.encode())
        if path and os.path.isfile(path):
            h.update(Path(path).read_bytes())
    return h.hexdigest()[:16]


def _template_source(module: ModuleType) -> str:
    parts = []
    for name, fn in vars(module).items():
        kind = getattr(fn, _MARK, None)
        if kind is None or getattr(fn, "__module__", None) != module.__name__:
            continue
        lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
        while lines and lines[0].lstrip().startswith("@"):
            lines.pop(0)  # the @template line
        parts.append(f"@{kind}\n" + "\n".join(lines) + "\n")
    if not parts:
        raise ValueError(f"{module.__name__} has no @template functions")
    return "\n\n".join(parts)


def _binding(name: str, value) -> str:
    if isinstance(value, (bool, int, float)):
        return f"{name} = {value!r}"
    module = getattr(value, "__module__", None)
    qualname = getattr(value, "__qualname__", None)
    if not module or not qualname or "<locals>" in qualname:
        raise ValueError(f"binding '{name}' must be a literal or an importable module-level "
                         f"object (got {value!r})")
    return f"from {module} import {qualname} as {name}"


def specialised_module(template_modules, tag: str, bindings: dict,
                       source: str = "") -> ModuleType:
    """The ``@template`` functions of `template_modules` (one module or a sequence) compiled
    with `bindings` (module docstring).

    Several template modules are combined in order: the globals of each (helpers,
    constants) are imported, a later module's names over an earlier's, and all their
    ``@template`` functions are copied, so a template function may call one that another
    module defines (a loop calling its geometry's gather). `tag`: a name for the
    specialisation (letters, digits, underscores), e.g. ``"pair_geometry__hertz_mindlin"``.
    `bindings`: name -> module-level object or int/float/bool literal. `source`: extra
    definitions (generated inline helpers) placed before the template functions.
    """
    if isinstance(template_modules, ModuleType):
        template_modules = (template_modules,)
    template_modules = tuple(template_modules)
    if not tag.replace("_", "").isalnum():
        raise ValueError(f"tag {tag!r}: letters, digits and underscores only")
    bound_modules = [sys.modules[v.__module__] for v in bindings.values()
                     if not isinstance(v, (bool, int, float))]
    body = "\n".join([
        "import importlib as _importlib",
        *(f"globals().update({{k: v for k, v in vars(_importlib.import_module({m.__name__!r}))"
          ".items() if not k.startswith('__')})" for m in template_modules),
        "from ecs_dem.jit import inline, kernel",
        *(_binding(k, v) for k, v in bindings.items()),
        "",
        source,
        "",
        *(_template_source(m) for m in template_modules),
    ])
    sources = _source_hash([*template_modules, *bound_modules])
    digest = hashlib.sha1((sources + body).encode()).hexdigest()[:16]
    names = ", ".join(m.__name__ for m in template_modules)
    text = (f"# Generated by ecs_dem.generated_kernels from {names}: {tag}\n"
            f"# sources {sources}; do not edit (rewritten when they change)\n" + body)
    name = f"{tag}_{digest}"
    module = _modules.get(name)
    if module is not None:
        return module
    path = kernel_dir() / f"{name}.py"
    if not path.is_file() or path.read_text() != text:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    spec = importlib.util.spec_from_file_location(f"ecs_dem_generated_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    _modules[name] = module
    return module


__all__ = ["template", "specialised_module", "kernel_dir"]
