"""`make test-s3`: the demo graph built with SUBTEXT_DATA_URL=s3://... against moto on 127.0.0.1,
compared with a local build of the same graph (issue #57).

Starts the tests' S3-compatible server (tests/objectstore/s3_server.py) and runs
``python -m cli.build --demo`` twice, each with its own fresh DAGSTER_HOME: first on the bucket
(so a failure shows early; the build has its own work dir, and ``SUBTEXT_DATA_DIR`` names a
directory that must stay absent), then on a local data dir. It copies the bucket into a folder,
fingerprints both with scripts/export_fingerprint.py and compares them, leaving out the per-run
columns docs/operations.md "Reproducible demos" lists. Prints both build times; exits 1 on any
difference or on any file under the guarded directory.

    .venv/bin/python scripts/s3_build_check.py [--out DIR] [--local-data DIR]

``--local-data`` reuses a local build already made from this commit (skips the local build).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.objectstore.s3_server import S3Server  # noqa: E402

IGNORE = (
    "call_id created_at latency_s rejected_at listed_at fetched_at pid request_id session_id "
    "tables/exports/:path tables/sources/:spec tables/source_items/:path tables/source_items/:url "
    "tables/videos/:url tables/videos/:source_path"
).split()


def build(env: dict[str, str], log: Path) -> float:
    start = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "cli.build", "--demo"], env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT
        )
    took = time.perf_counter() - start
    if done.returncode != 0:
        print(f"build failed (rc {done.returncode}); see {log}", flush=True)
        sys.exit(1)
    return took


def mirror(server: S3Server, bucket: str, prefix: str, dest: Path) -> int:
    import boto3

    s3 = boto3.client(
        "s3",
        endpoint_url=server.direct,
        aws_access_key_id=server.access_key,
        aws_secret_access_key=server.secret_key,
        region_name="us-east-1",
    )
    n = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for obj in page.get("Contents", []):
            path = dest / obj["Key"][len(prefix) + 1 :]
            path.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(bucket, obj["Key"], str(path))
            n += 1
    return n


def fingerprint(data: Path, out: Path) -> None:
    script = ROOT / "scripts" / "export_fingerprint.py"
    with out.open("w") as f:
        subprocess.run([sys.executable, str(script), str(data)], stdout=f, check=True, cwd=ROOT)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=tempfile.mkdtemp(prefix="s3-build-"))
    ap.add_argument("--local-data", default="")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SUBTEXT_DATA"))}
    figures: dict[str, float | int | str] = {}

    server = S3Server()
    bucket = "subtext-demo"
    server.make_bucket(bucket)
    guarded = out / "must-stay-absent"
    env = {
        **base,
        **server.env(),
        "SUBTEXT_DATA_URL": f"s3://{bucket}/forge",
        "SUBTEXT_DATA_DIR": str(guarded),
        "SUBTEXT_WORK_DIR": str(out / "work"),
        "DAGSTER_HOME": str(out / "dh-s3"),
        "SUBTEXT_DEMO_PORT": "0",
    }
    (out / "dh-s3").mkdir(exist_ok=True)
    figures["bucket_build_s"] = round(build(env, out / "s3.log"), 1)
    print(f"bucket build: {figures['bucket_build_s']} s", flush=True)
    figures["objects"] = mirror(server, bucket, "forge", out / "bucket-copy")
    server.stop()

    local = Path(args.local_data) if args.local_data else out / "local-data"
    if not args.local_data:
        env = {**base, "SUBTEXT_DATA_DIR": str(local), "DAGSTER_HOME": str(out / "dh-local"), "SUBTEXT_DEMO_PORT": "0"}
        (out / "dh-local").mkdir(exist_ok=True)
        figures["local_build_s"] = round(build(env, out / "local.log"), 1)
        print(f"local build: {figures['local_build_s']} s", flush=True)

    written = [str(p) for p in guarded.rglob("*")] if guarded.exists() else []
    figures["files_under_local_data_dir"] = len(written)
    fingerprint(local, out / "local.json")
    fingerprint(out / "bucket-copy", out / "bucket.json")
    script = ROOT / "scripts" / "export_fingerprint.py"
    cmp = subprocess.run(
        [
            sys.executable,
            str(script),
            "--compare",
            str(out / "local.json"),
            str(out / "bucket.json"),
            "--ignore",
            *IGNORE,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    print(cmp.stdout[-4000:], cmp.stderr[-2000:])
    figures["fingerprints_equal"] = "yes" if cmp.returncode == 0 else "no"
    # export_fingerprint reports other export files (cards, figures) as information only: every one
    # the local build wrote must be in the bucket too
    files = [set(json.loads((out / f"{n}.json").read_text())["export_files"]) for n in ("local", "bucket")]
    missing = sorted(files[0] - files[1])
    figures["export_files_missing_in_bucket"] = len(missing)
    print("\n".join(f"not in the bucket: exports/{m}" for m in missing))
    print(json.dumps(figures, indent=1))
    (out / "figures.json").write_text(json.dumps(figures, indent=1))
    return 0 if cmp.returncode == 0 and not written and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
