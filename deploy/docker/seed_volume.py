"""Copy the image's demo repository into a fresh volume, once, safely beside other replicas.

Docker and Podman copy an image's ``/models`` into a new, empty named volume by
themselves; Kubernetes does not. The manifests' init container runs::

    python /opt/mininn/seed_volume.py /models /mnt/models

mounting the PersistentVolumeClaim at ``/mnt/models``. Until the target holds
:data:`MARKER`, every model folder of the source that the target lacks is copied to a
hidden staging folder beside it and renamed into place (a server never sees half a
model; when two replicas seed at once, the first rename wins and the other discards
its copy); then the marker is written. Once marked, the target is never touched
again, so a model a user deletes stays deleted.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

__all__ = ["MARKER", "seed_volume"]

MARKER = ".mininn-seeded"

logger = logging.getLogger("seed_volume")


def seed_volume(source: Path, target: Path) -> list[str]:
    """Copy ``source``'s model folders that ``target`` lacks; the names copied.

    Does nothing when ``target`` already holds :data:`MARKER`.
    """
    target.mkdir(parents=True, exist_ok=True)
    if (target / MARKER).exists():
        return []
    copied = [
        folder.name
        for folder in sorted(source.iterdir())
        if folder.is_dir() and not folder.name.startswith(".") and _copy(folder, target)
    ]
    (target / MARKER).touch()
    return copied


def _copy(folder: Path, target: Path) -> bool:
    """Copy ``folder`` into ``target`` atomically; False when ``target`` has it already."""
    if (target / folder.name).exists():
        return False
    staging = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", suffix=".seeding", dir=target))
    try:
        shutil.copytree(folder, staging, dirs_exist_ok=True)
        try:
            os.rename(staging, target / folder.name)
        except OSError:  # another replica renamed its copy first
            return False
        return True
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def main(argv: list[str]) -> int:
    """``seed_volume.py SOURCE TARGET``; exit 2 on bad usage."""
    if len(argv) != 2:
        sys.stderr.write("usage: seed_volume.py SOURCE TARGET\n")
        return 2
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    copied = seed_volume(Path(argv[0]), Path(argv[1]))
    logger.info("seeded %s with %s", argv[1], ", ".join(copied) or "nothing")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
