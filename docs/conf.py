"""Sphinx configuration of the ecs_dem documentation site.

Build it with ``bash scripts/setup.sh docs`` (HTML in docs/_build/html). The pages are MyST
Markdown; the API reference is generated from the docstrings of every public module of
ecs_dem (autosummary, recursive: a new module gets its page without an edit here).
"""
import logging
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent

# The package is installed (editable) by scripts/setup.sh; fall back to the source tree so a
# plain `python -m sphinx docs out` works from a clone too. The folders components/, systems/
# and run/ are installed as ecs_dem.components, ecs_dem.systems and ecs_dem.run, which only
# the installed package maps.
try:
    import ecs_dem  # noqa: F401
except ImportError:  # pragma: no cover - documentation build without the install
    sys.path.insert(0, str(ROOT))

project = "ecs_dem"
author = "the ecs_dem authors"
copyright = "the ecs_dem authors"
release = version = "0.1.0"

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "sphinx.ext.mathjax",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "**/.ipynb_checkpoints"]
templates_path = ["_templates"]
html_static_path = [p for p in ["_static"] if (pathlib.Path(__file__).parent / p).is_dir()]  # pictures

# --- MyST: the Markdown pages -----------------------------------------------------------------
# Tables (GitHub style) are part of MyST itself; the extensions below add $...$ / $$...$$ math,
# \begin{align} environments, ::: fenced directives and definition lists.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist", "attrs_inline"]
myst_heading_anchors = 3   # [text](page.md#a-heading) links resolve to headings up to ###
myst_dmath_double_inline = True

# --- API reference ----------------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
# a package re-exports names (ecs_dem.World is ecs_dem.world.World): each object is
# documented once, in the module that defines it, whatever the package's __all__ says
autodoc_default_options = {"members": True, "show-inheritance": True, "ignore-module-all": True}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_preserve_defaults = True
napoleon_google_docstring = True
napoleon_numpy_docstring = True
napoleon_use_rtype = False
# numba kernels (CPUDispatcher objects) are listed and documented as functions: a dispatcher
# is a routine to autodoc and carries its Python function's signature and docstring
# (__wrapped__, __doc__), so no special documenter is needed.
# A package's __main__ runs its driver when imported; autosummary imports every submodule it
# finds, so those are mocked (a mocked module is left out of the reference).
_PACKAGES = {"ecs_dem": "ecs_dem", "components": "ecs_dem.components",
             "systems": "ecs_dem.systems", "run": "ecs_dem.run"}   # folder -> package
autosummary_mock_imports = sorted(
    ".".join((package, *path.relative_to(ROOT / folder).with_suffix("").parts))
    for folder, package in _PACKAGES.items()
    for path in (ROOT / folder).rglob("__main__.py")
)

# No network when the site is built (CI included): no intersphinx inventories are fetched.

# --- HTML -------------------------------------------------------------------------------------
html_theme = "furo"
html_title = "ecs_dem"
# MathJax typesets the math in the browser. scripts/setup.sh docs puts a copy into the virtual
# environment when npm is present: the site then carries it and works offline; otherwise the
# pages load it from its CDN.
_MATHJAX = pathlib.Path(sys.prefix) / "share" / "ecs_dem-docs"
if (_MATHJAX / "mathjax" / "es5" / "tex-mml-chtml.js").is_file():
    html_static_path.append(str(_MATHJAX))
    mathjax_path = "mathjax/es5/tex-mml-chtml.js"

# A section of the site with no page yet (a glob toctree in index.md that matches nothing) is
# not an error. Sphinx 9.0 emits that warning without its type, so suppress_warnings cannot
# name it (sphinx-doc/sphinx#14625); the filter below drops exactly that message until it can.
suppress_warnings = ["toc.empty_glob"]


class _EmptyGlobFilter(logging.Filter):
    def filter(self, record):
        return not (getattr(record, "subtype", None) == "empty_glob"
                    and getattr(record, "type", None) is None)


# --- Docstrings --------------------------------------------------------------------------------
# Docstrings are reStructuredText that reads as plain text in the source too, and write a norm
# or an absolute value as |x| (|d|, |n1|^2). To reStructuredText |x| is a substitution
# reference, which docstrings never mean: outside inline literals, roles and literal blocks a
# "|" is made literal before the docstring is parsed.
_LITERAL_SPAN = re.compile(r"(``.*?``|:[\w:.-]+:`[^`]*`|`[^`]*`_{0,2})")


def _pipes_literal(line):
    parts = _LITERAL_SPAN.split(line)
    parts[::2] = [part.replace("|", r"\|") for part in parts[::2]]
    return "".join(parts)


def _indent(line):
    return len(line) - len(line.lstrip())


def literal_pipes(app, what, name, obj, options, lines):
    literal_from = None  # indentation of the paragraph that opened a literal block
    for k, line in enumerate(lines):
        if literal_from is not None:
            if not line.strip() or _indent(line) > literal_from:
                continue
            literal_from = None
        if line.rstrip().endswith("::"):
            literal_from = _indent(line)
        lines[k] = _pipes_literal(line)


def setup(app):
    logging.getLogger("sphinx.sphinx.directives.other").addFilter(_EmptyGlobFilter())
    app.connect("autodoc-process-docstring", literal_pipes, priority=600)  # after napoleon
