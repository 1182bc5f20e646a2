#!/usr/bin/env python
"""Upload a built dataset folder, a Space or an evaluate metric module to the Hugging Face Hub. Dry run by default.

    python scripts/push_to_hub.py datasets/style_gap_testset --repo-id ORG/style_gap_testset          # dry run
    python scripts/push_to_hub.py datasets/style_gap_testset --repo-id ORG/style_gap_testset --push   # upload
    python scripts/push_to_hub.py spaces/style_eval_demo --repo-id ORG/style-eval-demo                # a Space
    python scripts/push_to_hub.py metrics/logprob_style --repo-id ORG/logprob_style                    # a metric module

Spaces and metric modules (both Hub *Spaces*) ship a wheel of ``styleeval`` built from this checkout inside the
uploaded folder, and their ``requirements.txt`` installs that wheel (``./styleeval-<version>-py3-none-any.whl``), so
they run without the package being on an index. The folder is assembled in ``--build-dir`` (a temporary folder by
default) and that folder is what is uploaded.

Only ``README.md`` and the Parquet files the card's ``configs:`` list are uploaded; ``data/restricted/``
(licence-restricted STEL samples) is never uploaded. Folders whose card says ``license: unknown`` (sources
without a licence file) need ``--allow-unknown-license`` to be pushed. Build the folder first with
``styleeval build-datasets``.
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
        raise SystemExit(f"not built yet (run styleeval build-datasets): {', '.join(missing)}")
    return files, meta


def card_for_hub(folder: Path, repo_id: str) -> str:
    """The dataset card with its Hub usage line filled in (``ORG/<name>`` -> the real repo id)."""
    text = (folder / "README.md").read_text(encoding="utf-8")
    return text.replace(f'"ORG/{folder.resolve().name}"', f'"{repo_id}"')


def build_space(folder: Path, build: Path) -> list[str]:
    """Copy a Space / metric module into ``build`` with a freshly built styleeval wheel; returns the files."""
    import shutil
    import subprocess

    root = Path(__file__).resolve().parents[1]
    build.mkdir(parents=True, exist_ok=True)
    for old in build.glob("styleeval-*.whl"):
        old.unlink()
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w",
                           str(build), str(root)], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"building the styleeval wheel failed: {proc.stderr.strip()[-500:]}")
    wheel = next(build.glob("styleeval-*.whl")).name
    files = []
    for path in sorted(folder.iterdir()):
        if path.is_file() and path.name not in ("requirements.txt",) and not path.name.startswith("."):
            shutil.copy2(path, build / path.name)
            files.append(path.name)
    lines = (folder / "requirements.txt").read_text(encoding="utf-8").splitlines() if (
        folder / "requirements.txt").exists() else []
    kept = [line for line in lines if line.strip() and not line.strip().startswith("#")
            and not line.strip().lower().startswith("styleeval")]
    (build / "requirements.txt").write_text("\n".join([f"./{wheel}", *kept]) + "\n", encoding="utf-8")
    return [*files, "requirements.txt", wheel]


def main_space(args: argparse.Namespace) -> int:
    """Dry run or upload of a Space / metric module (see the module docstring)."""
    import tempfile

    folder = args.folder
    if not (folder / "app.py").is_file() or not (folder / "README.md").is_file():
        raise SystemExit(f"{folder}: a Space needs app.py and README.md")
    build = Path(args.build_dir) if args.build_dir else Path(tempfile.mkdtemp(prefix="styleeval-space-"))
    try:
        return _space(args, folder, build)
    finally:
        if not args.build_dir:  # a temporary build (dry run or upload) is removed; a --build-dir is the user's
            import shutil

            shutil.rmtree(build, ignore_errors=True)


def _space(args: argparse.Namespace, folder: Path, build: Path) -> int:
    files = build_space(folder, build)
    repo_id = args.repo_id or folder.resolve().name
    print(f"{'Uploading' if args.push else 'Dry run: would upload'} to https://huggingface.co/spaces/{repo_id} "
          f"from {build}:")
    for rel in files:
        print(f"  {rel} ({(build / rel).stat().st_size} bytes)")
    print("requirements.txt: " + " | ".join((build / "requirements.txt").read_text(encoding="utf-8").split()))
    if not args.push:
        print("dry run: nothing uploaded (pass --push to upload)")
        return 0
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(repo_id, repo_type="space", space_sdk="gradio", private=args.private, exist_ok=True)
    commit = api.upload_folder(folder_path=str(build), repo_id=repo_id, repo_type="space", revision=args.revision,
                               allow_patterns=files, commit_message="Upload styleeval Space")
    print(f"pushed: {commit}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point; returns the exit status."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path,
                        help="built dataset folder (datasets/asset), Space (spaces/...) or metric module (metrics/...)")
    parser.add_argument("--repo-type", choices=("dataset", "space"), default=None,
                        help="default: space for spaces/ and metrics/ folders (anything with an app.py), else dataset")
    parser.add_argument("--build-dir", default=None, help="where a Space is assembled (default: a temporary folder)")
    parser.add_argument("--repo-id", help="Hub dataset repository, e.g. ORG/asset (default: <folder name>)")
    parser.add_argument("--push", action="store_true", help="really upload (default: dry run)")
    parser.add_argument("--private", action="store_true", help="create the repository as private")
    parser.add_argument("--revision", default=None, help="branch to push to (default: main)")
    parser.add_argument("--allow-unknown-license", action="store_true",
                        help="push even though the card says license: unknown")
    args = parser.parse_args(argv)
    folder = args.folder
    kind = args.repo_type or ("space" if (folder / "app.py").is_file() else "dataset")
    if kind == "space":
        return main_space(args)
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
    usage = [line.strip() for line in card_for_hub(folder, repo_id).splitlines() if "load_dataset(" in line]
    if usage:
        print(f"card usage: {usage[0]}")
    if not args.push:
        print("dry run: nothing uploaded (pass --push to upload)")
        return 0
    from huggingface_hub import HfApi

    api = HfApi()
    api.create_repo(repo_id, repo_type="dataset", private=args.private, exist_ok=True)
    api.upload_file(path_or_fileobj=card_for_hub(folder, repo_id).encode("utf-8"), path_in_repo="README.md",
                    repo_id=repo_id, repo_type="dataset", revision=args.revision,
                    commit_message="Dataset card with the Hub repo id")
    commit = api.upload_folder(
        folder_path=str(folder),
        repo_id=repo_id,
        repo_type="dataset",
        revision=args.revision,
        allow_patterns=[f for f in files if f != "README.md"],
        ignore_patterns=NEVER_UPLOAD,
        commit_message="Upload dataset built by styleeval build-datasets",
    )
    print(f"pushed: {commit}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
