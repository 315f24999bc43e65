"""Render one snapshot of an ecs_dem output file to a PNG: grains as shaded spheres, membranes as a
translucent surface.

    python -m ecs_dem.run.render output/pour.h5 --out pour.png                 # the last snapshot
    python -m ecs_dem.run.render output/triaxial/small_patch_seed1.h5 --frame -1 --out sample.png
    python -m ecs_dem.run.render output/pour.h5 --frame 0 --color-by height --elev 30 --out start.png

Off-screen (matplotlib's Agg canvas: no display needed), from the HDF5 output alone. Grains are the
particles of a snapshot that belong to no membrane (``membrane`` is -1, or the snapshot has no
``membrane`` dataset); each is drawn at its radius, as a faceted sphere lit from the viewer's upper
left, or, above ``--max-spheres`` grains (``--style auto``), as a round marker of the same size
(faster; grains and membrane are then not depth-sorted against each other). Membrane triangles
(the snapshot's ``triangles``) are drawn translucent, sorted by depth together with the spheres, so
the grains inside show through the front of the sheet. The view is orthographic; ``--elev`` and
``--azim`` set it in degrees as matplotlib does. The PNG is cropped to the scene and stored with an
adaptive 256-colour palette, which keeps pictures for the docs small.

``--frame`` counts snapshots in step order, Python style (0 the first, -1 the last). Bad input (no
such file, a file without snapshots, a frame out of range) prints ``error: ...`` and exits with 2.
"""
from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import h5py
import numpy as np

from ecs_dem import InputError

#: grain colour (sand) and membrane colour (rubber blue), RGB in [0, 1]
GRAIN_RGB = np.array([0.93, 0.70, 0.38])
MEMBRANE_RGB = np.array([0.25, 0.45, 0.75])
MEMBRANE_ALPHA = 0.22
MEMBRANE_EDGE = (0.12, 0.22, 0.40, 0.35)
#: facets of a sphere: latitude bands x longitude sectors
SPHERE_BANDS, SPHERE_SECTORS = 9, 16
STYLES = ("auto", "spheres", "markers")
COLOR_BY = ("none", "height", "speed", "radius")


def load_frame(path, frame: int = -1) -> dict:
    """The particles and membrane triangles of snapshot number `frame` of an ecs_dem output file.

    Returns position (n, 3) m, radius (n,) m, membrane (n,) int (-1 for grains), velocity (n, 3)
    m/s or None, triangles (m, 3) rows into those arrays (or an empty (0, 3) array), step, time
    and the number of snapshots in the file.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a directory: give an ecs_dem output file (.h5) in it")
    try:
        f = h5py.File(path, "r")
    except FileNotFoundError:
        raise InputError(f"{path} does not exist: give an ecs_dem output file (.h5)") from None
    except OSError as exc:
        raise InputError(f"cannot open {path} as an HDF5 file ({exc}); if a run is still writing "
                         "it, wait for the run to end or set HDF5_USE_FILE_LOCKING=FALSE") from None
    with f:
        if "snapshots" not in f:
            what = "a checkpoint" if "tables" in f else "not an ecs_dem output file"
            raise InputError(f"{path} has no /snapshots group ({what}): give a run's output file, "
                             "written with snapshots (snapshot_every > 0)")
        names = sorted(f["snapshots"])
        if not names:
            raise InputError(f"{path} holds no snapshots yet: run longer than one snapshot "
                             "interval, or lower snapshot_every")
        if not -len(names) <= frame < len(names):
            raise InputError(f"--frame {frame} is out of range: {path} holds {len(names)} "
                             f"snapshot(s), frames 0 to {len(names) - 1} (or -1 for the last)")
        snap = f["snapshots"][names[frame]]
        for name in ("position", "radius"):
            if name not in snap:
                raise InputError(f"{path} snapshot {names[frame]} has no '{name}' dataset: it "
                                 "was written without it, so the grains cannot be drawn")
        position = np.asarray(snap["position"][()], dtype=float).reshape(-1, 3)
        n = len(position)
        return {
            "position": position,
            "radius": np.asarray(snap["radius"][()], dtype=float).reshape(n),
            "membrane": (np.asarray(snap["membrane"][()]).reshape(n) if "membrane" in snap
                         else np.full(n, -1)),
            "velocity": (np.asarray(snap["velocity"][()], dtype=float).reshape(n, 3)
                         if "velocity" in snap else None),
            "triangles": (np.asarray(snap["triangles"][()], dtype=np.int64).reshape(-1, 3)
                          if "triangles" in snap else np.zeros((0, 3), np.int64)),
            "step": int(snap.attrs.get("step", int(names[frame]))),
            "time": float(snap.attrs.get("time", np.nan)),
            "snapshots": len(names),
        }


def _unit_sphere() -> np.ndarray:
    """Facets of a unit sphere, (k, 4, 3): quads, the polar triangles with a repeated vertex."""
    theta = np.linspace(0.0, np.pi, SPHERE_BANDS + 1)
    phi = np.linspace(0.0, 2.0 * np.pi, SPHERE_SECTORS + 1)
    t0, p0 = np.meshgrid(theta[:-1], phi[:-1], indexing="ij")
    t1, p1 = np.meshgrid(theta[1:], phi[1:], indexing="ij")

    def point(t, p):
        return np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)], axis=-1)

    quads = np.stack([point(t0, p0), point(t1, p0), point(t1, p1), point(t0, p1)], axis=2)
    return quads.reshape(-1, 4, 3)


def _view_vectors(elev: float, azim: float):
    """Unit vectors toward the viewer and to the screen's right, in world coordinates."""
    e, a = np.radians(elev), np.radians(azim)
    toward = np.array([np.cos(e) * np.cos(a), np.cos(e) * np.sin(a), np.sin(e)])
    right = np.array([-np.sin(a), np.cos(a), 0.0])
    return toward, right


def _light(elev: float, azim: float) -> np.ndarray:
    toward, right = _view_vectors(elev, azim)
    up = np.cross(toward, right)
    light = toward + 0.6 * up - 0.5 * right
    return light / np.linalg.norm(light)


def _shade(rgb: np.ndarray, normals: np.ndarray, light: np.ndarray, two_sided=False) -> np.ndarray:
    """Lambert shading with an ambient term: rgb (k, 3) or (3,), normals (k, 3) unit."""
    cos = normals @ light
    cos = np.abs(cos) if two_sided else np.clip(cos, 0.0, None)
    return np.clip(rgb * (0.35 + 0.65 * cos)[:, None], 0.0, 1.0)


def _grain_colors(frame: dict, grains: np.ndarray, color_by: str) -> np.ndarray:
    n = int(grains.sum())
    if color_by == "none" or n == 0:
        return np.tile(GRAIN_RGB, (n, 1))
    if color_by == "height":
        value = frame["position"][grains, 2]
    elif color_by == "radius":
        value = frame["radius"][grains]
    else:
        if frame["velocity"] is None:
            raise InputError("--color-by speed needs the snapshot's 'velocity', which this file "
                             "lacks: choose none, height or radius")
        value = np.linalg.norm(frame["velocity"][grains], axis=1)
    from matplotlib import colormaps
    span = np.ptp(value)
    scaled = (value - value.min()) / span if span > 0 else np.full(n, 0.5)
    return colormaps["viridis"](scaled)[:, :3]


def _cropped(image, margin: int):
    """`image` cropped to what is not white, plus `margin` pixels; None if all of it is white."""
    from PIL import Image
    ink = Image.eval(image.convert("L"), lambda v: 255 - v).point(lambda v: 255 if v > 8 else 0)
    box = ink.getbbox()
    if box is None:
        return None
    return image.crop((max(box[0] - margin, 0), max(box[1] - margin, 0),
                       min(box[2] + margin, image.width), min(box[3] + margin, image.height)))


def _pixels(ax, points: np.ndarray, proj3d) -> np.ndarray:
    """Display coordinates (k, 2) in pixels of world points (k, 3), as last drawn."""
    xs, ys, _ = proj3d.proj_transform(*np.asarray(points, dtype=float).T, ax.get_proj())
    return ax.transData.transform(np.column_stack([xs, ys]))


def render(path, out, frame: int = -1, style: str = "auto", color_by: str = "none",
           elev: float = 12.0, azim: float = -60.0, width: int = 640, max_spheres: int = 6000,
           title: str | None = None) -> Path:
    """Render snapshot `frame` of the output file `path` to the PNG `out`; returns its path."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from mpl_toolkits.mplot3d import proj3d
    from mpl_toolkits.mplot3d.art3d import Poly3DCollection
    from PIL import Image

    if style not in STYLES:
        raise InputError(f"style {style!r} is not one of {', '.join(STYLES)}")
    if color_by not in COLOR_BY:
        raise InputError(f"color_by {color_by!r} is not one of {', '.join(COLOR_BY)}")
    if not 64 <= width <= 4096:
        raise InputError(f"width {width} px is outside 64-4096: choose a picture size in between")
    out = Path(out)
    if out.suffix.lower() != ".png":
        raise InputError(f"--out {out} does not end in .png: the renderer writes PNG files")
    data = load_frame(path, frame)
    x, radius = data["position"], data["radius"]
    grains = (data["membrane"] < 0) & (radius > 0)
    triangles = data["triangles"]
    if len(triangles) and (triangles.min() < 0 or triangles.max() >= len(x)):
        raise InputError(f"{path}: the snapshot's triangles refer to rows outside its "
                         f"{len(x)} particles: the file is damaged")
    if not grains.any() and not len(triangles):
        raise InputError(f"{path} step {data['step']}: the snapshot has no grains (radius > 0) "
                         "and no membrane triangles: nothing to draw")
    if style == "auto":
        style = "spheres" if grains.sum() <= max_spheres else "markers"

    drawn = np.concatenate([x[grains] - radius[grains, None], x[grains] + radius[grains, None],
                            x[triangles.ravel()]])
    low, high = drawn.min(axis=0), drawn.max(axis=0)
    span = np.maximum(high - low, 1e-3 * max(np.ptp(drawn), 1e-12))
    centre = 0.5 * (low + high)
    low, high = centre - 0.5 * span, centre + 0.5 * span

    # the canvas takes the shape of the scene's bounding box as seen from the view
    toward, right = _view_vectors(elev, azim)
    box_corners = np.array([[low[0] if i & 1 else high[0], low[1] if i & 2 else high[1],
                             low[2] if i & 4 else high[2]] for i in range(8)])
    screen_w = np.ptp(box_corners @ right)
    screen_h = np.ptp(box_corners @ np.cross(toward, right))
    aspect = float(np.clip(screen_h / max(screen_w, 1e-300), 0.4, 2.5))
    dpi = 100
    fig = Figure(figsize=(width / dpi, width * aspect / dpi), dpi=dpi, facecolor="white")
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0), projection="3d", proj_type="ortho")
    ax.set_xlim(low[0], high[0])
    ax.set_ylim(low[1], high[1])
    ax.set_zlim(low[2], high[2])
    ax.set_box_aspect(tuple(span))
    ax.view_init(elev=elev, azim=azim)
    ax.set_axis_off()
    # matplotlib leaves wide margins around a 3-D box: zoom so the scene's bounding box, as
    # projected, fills the canvas (the artists are not clipped to the axes' unzoomed frame)
    canvas.draw()
    corners_px = _pixels(ax, box_corners, proj3d)
    fill = np.array([fig.bbox.width, fig.bbox.height]) / np.maximum(np.ptp(corners_px, axis=0), 1.0)
    ax.set_box_aspect(tuple(span), zoom=0.96 * float(fill.min()))
    canvas.draw()
    light = _light(elev, azim)
    colors = _grain_colors(data, grains, color_by)

    ax.computed_zorder = False        # layers below: membrane behind, grains, membrane in front
    if style == "spheres" and grains.any():
        unit = _unit_sphere()
        normals = unit.mean(axis=1)
        normals /= np.linalg.norm(normals, axis=1)[:, None]
        light_factor = 0.35 + 0.65 * np.clip(normals @ light, 0.0, None)         # (k,)
        facets = (x[grains, None, None, :] + radius[grains, None, None, None] * unit)
        rgb = np.clip(colors[:, None, :] * light_factor[None, :, None], 0.0, 1.0)
        ax.add_collection3d(Poly3DCollection(facets.reshape(-1, 4, 3), facecolors=rgb.reshape(-1, 3),
                                             edgecolors="none", linewidths=0.0, zorder=2,
                                             clip_on=False))
    if len(triangles):
        corners = x[triangles]                                                     # (m, 3, 3)
        normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
        norm = np.linalg.norm(normal, axis=1)
        normal = normal / np.where(norm > 0, norm, 1.0)[:, None]
        rgba = np.column_stack([_shade(MEMBRANE_RGB, normal, light, two_sided=True),
                                np.full(len(corners), MEMBRANE_ALPHA)])
        front = normal @ toward > 0
        for part, zorder in ((~front, 1), (front, 3)):
            if part.any():
                ax.add_collection3d(Poly3DCollection(corners[part], facecolors=rgba[part],
                                                     edgecolors=MEMBRANE_EDGE, linewidths=0.3,
                                                     zorder=zorder, clip_on=False))
    if style == "markers" and grains.any():
        pixels = np.linalg.norm(_pixels(ax, x[grains] + radius[grains, None] * right, proj3d)
                                - _pixels(ax, x[grains], proj3d), axis=1)
        size = (2.0 * pixels * 72.0 / dpi) ** 2                               # points^2
        depth = x[grains] @ toward
        spread = np.ptp(depth)
        near = (depth - depth.min()) / spread if spread > 0 else np.ones(len(depth))
        shaded = np.clip(colors * (0.55 + 0.45 * near)[:, None], 0.0, 1.0)
        order = np.argsort(depth)                                        # far ones first
        ax.scatter(*x[grains][order].T, s=size[order], c=shaded[order], depthshade=False,
                   edgecolors=(0.0, 0.0, 0.0, 0.35), linewidths=0.3, zorder=2, clip_on=False)
    canvas.draw()
    image = Image.fromarray(np.asarray(canvas.buffer_rgba())[..., :3].copy())
    image = _cropped(image, margin=width // 40)
    if image is None:
        raise InputError(f"{path} step {data['step']}: the picture came out blank")
    if title is None:
        title = f"step {data['step']:,}, t = {data['time']:.4g} s"
    if title:
        band = Figure(figsize=(image.width / dpi, 0.3), dpi=dpi, facecolor="white")
        band_canvas = FigureCanvasAgg(band)
        text = band.text(0.5, 0.5, title, ha="center", va="center", fontsize=10, color="0.2")
        wide = text.get_window_extent(band_canvas.get_renderer()).width
        if wide > 0.96 * image.width:                  # a long caption shrinks to fit
            text.set_fontsize(10 * 0.96 * image.width / wide)
        band_canvas.draw()
        caption = Image.fromarray(np.asarray(band_canvas.buffer_rgba())[..., :3].copy())
        stacked = Image.new("RGB", (image.width, caption.height + image.height), "white")
        stacked.paste(caption, (0, 0))
        stacked.paste(image, (0, caption.height))
        image = stacked
    image = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    out.parent.mkdir(parents=True, exist_ok=True)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    out.write_bytes(buffer.getvalue())
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[1:]))
    parser.add_argument("file", help="ecs_dem output file (.h5 with /snapshots)")
    parser.add_argument("--frame", type=int, default=-1,
                        help="snapshot number in step order, -1 the last (default)")
    parser.add_argument("--out", required=True, help="PNG file to write")
    parser.add_argument("--style", choices=STYLES, default="auto",
                        help="grains as faceted spheres or round markers (auto: spheres up to "
                             "--max-spheres grains)")
    parser.add_argument("--max-spheres", type=int, default=6000,
                        help="most grains --style auto draws as spheres (default 6000)")
    parser.add_argument("--color-by", choices=COLOR_BY, default="none",
                        help="colour grains by a quantity (viridis), or one sand colour (none)")
    parser.add_argument("--elev", type=float, default=12.0, help="view elevation, degrees")
    parser.add_argument("--azim", type=float, default=-60.0, help="view azimuth, degrees")
    parser.add_argument("--width", type=int, default=640, help="canvas width in pixels before "
                                                               "cropping (default 640)")
    parser.add_argument("--title", default=None,
                        help="caption above the picture (default: step and time; '' for none)")
    args = parser.parse_args(argv)
    try:
        out = render(args.file, args.out, frame=args.frame, style=args.style,
                     color_by=args.color_by, elev=args.elev, azim=args.azim, width=args.width,
                     max_spheres=args.max_spheres, title=args.title)
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({out.stat().st_size / 1024:.0f} kB) from {args.file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
