"""Importing ultralytics through the project must not pin torch to one thread."""

import os
import subprocess
import sys


def test_import_keeps_all_cpu_threads():
    code = (
        "import os; os.environ.pop('OMP_NUM_THREADS', None)\n"
        "from forge.vision.offline import import_ultralytics; import_ultralytics()\n"
        "import torch; print(torch.get_num_threads(), os.environ.get('OMP_NUM_THREADS'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env.update(YOLO_OFFLINE="1", YOLO_AUTOINSTALL="false")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    threads, omp = out.stdout.strip().splitlines()[-1].split()
    assert int(threads) == (os.cpu_count() or 1)
    assert omp == "None"
