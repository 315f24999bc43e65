"""Output paths: whether a file can be written somewhere, asked before a run writes anything."""
from __future__ import annotations

import os
from pathlib import Path


def unwritable(path, what: str = "output file") -> str | None:
    """Why `what` cannot be written at `path` (None if it can), without touching anything:
    a directory there, a file where a directory should be, no permission."""
    path = Path(path)
    if path.is_dir():
        return f"{what} {path} is a directory: choose a file name (or another directory)"
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        return (f"cannot create {what} {path}: {parent} is a file, not a directory; "
                "choose another directory")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"cannot write {what} {path}: permission denied; choose another directory"
    return None
