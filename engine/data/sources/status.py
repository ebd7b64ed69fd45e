"""``dataset_status`` for a source: read and validate it, say what it holds or why not."""

from __future__ import annotations

from engine.data.sources import SourceOptions, load_source, parse_source
from engine.data.status import DatasetStatus
from engine.errors import DatasetError

DESCRIPTIONS = {
    "npz": "NumPy .npz arrays (x, y)",
    "folder": "image folder, one sub-folder per class",
    "hf": "Hugging Face dataset (save_to_disk or Parquet)",
}
HOW_TO = {
    "npz": "an .npz with arrays x and y (or x_train, y_train, x_test, y_test)",
    "folder": "a folder with one sub-folder of images per class (optionally under train/ and test/)",
    "hf": "a folder written by Dataset.save_to_disk, or of .parquet files",
}


def source_status(name: str, opts: SourceOptions | None = None) -> DatasetStatus:
    """The DatasetStatus of source ``name``: its splits when it reads, else ``problem``."""
    src = parse_source(name)
    found = src.path.exists() or src.path.is_symlink()  # a broken link: say what it is
    splits: dict[str, int] = {}
    problem = None
    if found:
        try:
            raw = load_source(name, opts)
            splits = {k: sp.size for k, sp in raw.splits.items()}
        except DatasetError as e:
            problem = str(e)
    return DatasetStatus(
        name=src.name,
        description=DESCRIPTIONS[src.kind],
        found=found,
        path=src.path if found else None,
        builtin=False,
        splits=splits,
        official=dict(splits),
        how_to_get=f"{src.kind}:PATH names {HOW_TO[src.kind]}",
        problem=problem,
    )
