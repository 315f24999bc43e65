"""Screenshots of the built documentation site, to look at it as a reader does.

Opens the site's index, a tutorial page and an API page in headless Chromium (Debian's
``chromium``; installed with apt by this script when missing, as root) and writes one PNG per
page::

    bash scripts/setup.sh docs                  # builds docs/_build/html
    .venv/bin/python bench/screenshots.py       # PNGs in /tmp/ecs_dem_screens
    .venv/bin/python bench/screenshots.py OUT --site docs/_build/html --height 2400

The tutorial page is the first of docs/tutorials (``--tutorial NAME`` picks another; without
tutorials the physics page stands in); the API page is a module with numba kernels, classes
and math in its docstrings (``--api MODULE``). Prints the path of each PNG.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
DEFAULT_API = "ecs_dem.systems.membrane.bending"


def chromium() -> str:
    """The Chromium executable, installed from Debian's packages when missing."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    if os.geteuid() != 0:
        sys.exit("screenshots: chromium is not installed; run as root to let this script "
                 "install it (apt-get install chromium), or install it yourself")
    print("screenshots: installing Debian's chromium (apt-get install chromium)", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env)
    subprocess.run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
                   check=True, env=env, stdout=subprocess.DEVNULL)
    path = shutil.which("chromium")
    if not path:
        sys.exit("screenshots: apt-get installed chromium but it is not on PATH")
    return path


def pages(site: pathlib.Path, tutorial: str | None, api: str) -> dict[str, pathlib.Path]:
    """name -> HTML file of the three pages, each checked to exist."""
    tutorials = sorted((site / "tutorials").glob("*.html"))
    if tutorial:
        tutorial_page = site / "tutorials" / f"{tutorial}.html"
    elif tutorials:
        tutorial_page = tutorials[0]
    else:
        print("screenshots: the site has no tutorials yet; the physics page stands in")
        tutorial_page = site / "physics.html"
    chosen = {"index": site / "index.html", "tutorial": tutorial_page,
              "api": site / "api" / "_autosummary" / f"{api}.html"}
    for name, path in chosen.items():
        if not path.is_file():
            sys.exit(f"screenshots: no {name} page {path}; build the site first "
                     "(bash scripts/setup.sh docs) or name an existing page")
    return chosen


def shoot(browser: str, page: pathlib.Path, png: pathlib.Path, width: int, height: int,
          wait_ms: int) -> None:
    """One headless Chromium run: the page at width x height CSS pixels to png."""
    command = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", f"--window-size={width},{height}",
               f"--virtual-time-budget={wait_ms}", f"--screenshot={png}", page.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    if done.returncode != 0 or not png.is_file():
        sys.exit(f"screenshots: chromium failed on {page} (exit {done.returncode}):\n"
                 f"{done.stderr[-2000:]}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default="/tmp/ecs_dem_screens",
                        help="folder for the PNGs (default %(default)s)")
    parser.add_argument("--site", default=str(ROOT / "docs" / "_build" / "html"),
                        help="the built HTML site (default docs/_build/html)")
    parser.add_argument("--tutorial", help="tutorial page name (default: the first)")
    parser.add_argument("--api", default=DEFAULT_API,
                        help="module whose API page to open (default %(default)s)")
    parser.add_argument("--width", type=int, default=1280, help="window width, CSS px")
    parser.add_argument("--height", type=int, default=1600, help="window height, CSS px")
    parser.add_argument("--wait-ms", type=int, default=5000,
                        help="virtual time the page gets to load scripts (math), ms")
    args = parser.parse_args(argv)

    site = pathlib.Path(args.site).resolve()
    chosen = pages(site, args.tutorial, args.api)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    browser = chromium()
    for name, page in chosen.items():
        png = out / f"{name}.png"
        png.unlink(missing_ok=True)
        shoot(browser, page, png, args.width, args.height, args.wait_ms)
        print(f"{png}  <- {page.relative_to(site)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
