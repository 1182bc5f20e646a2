#!/usr/bin/env python
"""Upload a built dataset folder (card + Parquet files) to the Hugging Face Hub. Dry run by default.

    python scripts/push_to_hub.py datasets/style_gap_testset --repo-id ORG/style_gap_testset          # dry run
    python scripts/push_to_hub.py datasets/style_gap_testset --repo-id ORG/style_gap_testset --push   # upload

Only ``README.md`` and the Parquet files the card's ``configs:`` list are uploaded; ``data/restricted/``
(licence-restricted STEL samples) is never uploaded. Folders whose card says ``license: unknown`` (sources
without a licence file) need ``--allow-unknown-license`` to be pushed. Build the folder first with
``scripts/build_datasets.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from huggingface_hub import DatasetCard

NEVER_UPLOAD = ["data/restricted/**", "**/__init__.py"]


def files_to_upload(folder: Path) -> tuple[list[str], dict]:
    """The relative paths to upload (card first) and the card metadata; errors if a listed file is missing."""
    card_path = folder / "README.md"
    if not card_path.is_file():
        raise SystemExit(f"{card_path} not found: not a dataset folder")
    meta = DatasetCard.load(card_path).data.to_dict()
    files = ["README.md"]
    missing = []
    for config in meta.get("configs", []):
        entries = config["data_files"]
        for entry in entries if isinstance(entries, list) else [entries]:
            paths = entry["path"] if isinstance(entry, dict) else entry
            for rel in [paths] if isinstance(paths, str) else paths:
                if rel.startswith("data/restricted/"):
                    raise SystemExit(f"{card_path}: config {config['config_name']!r} lists a restricted file {rel}")
                (files if (folder / rel).is_file() else missing).append(rel)
    if missing:
        raise SystemExit(f"not built yet (run scripts/build_datasets.py): {', '.join(missing)}")
    return files, meta


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path, help="built dataset folder, e.g. datasets/asset")
    parser.add_argument("--repo-id", help="Hub dataset repository, e.g. ORG/asset (default: <folder name>)")
    parser.add_argument("--push", action="store_true", help="really upload (default: dry run)")
    parser.add_argument("--private", action="store_true", help="create the repository as private")
    parser.add_argument("--revision", default=None, help="branch to push to (default: main)")
    parser.add_argument("--allow-unknown-license", action="store_true",
                        help="push even though the card says license: unknown")
    args = parser.parse_args(argv)
    folder = args.folder
    files, meta = files_to_upload(folder)
    repo_id = args.repo_id or folder.resolve().name
    license_id = meta.get("license", "unknown")
    notes: list[str] = []
    if license_id == "unknown" and not args.allow_unknown_license:
        message = "the source has no licence file (license: unknown); ask its authors, then pass --allow-unknown-license"
        if args.push:
            print(f"refusing to push: {message}", file=sys.stderr)
            return 2
        notes = [message]
    print(f"{'Uploading' if args.push else 'Dry run: would upload'} to https://huggingface.co/datasets/{repo_id} "
          f"(license: {license_id}):")
    for rel in files:
        print(f"  {rel} ({(folder / rel).stat().st_size} bytes)")
    skipped = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()
                     and str(p.relative_to(folder)) not in files)
    if skipped:
        print(f"  not uploaded: {', '.join(skipped)}")
    for note in notes:
        print(f"note: {note}")
    if not args.push:
        print("dry run: nothing uploaded (pass --push to upload)")
        return 0
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", private=args.private, exist_ok=True)
    commit = api.upload_folder(
        folder_path=str(folder),
        repo_id=repo_id,
        repo_type="dataset",
        revision=args.revision,
        allow_patterns=files,
        ignore_patterns=NEVER_UPLOAD,
        commit_message="Upload dataset built by styleeval scripts/build_datasets.py",
    )
    print(f"pushed: {commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
