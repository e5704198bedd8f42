"""Importing ultralytics through the project must not pin torch to one thread."""

import os
import subprocess
import sys


def test_import_keeps_all_cpu_threads_in_every_thread():
    code = (
        "from forge.vision.offline import import_ultralytics; import_ultralytics()\n"
        "import threading, torch\n"
        "seen = []\n"
        "t = threading.Thread(target=lambda: seen.append(torch.get_num_threads())); t.start(); t.join()\n"
        "print(torch.get_num_threads(), seen[0])"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    env.update(YOLO_OFFLINE="1", YOLO_AUTOINSTALL="false")
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    main, worker = map(int, out.stdout.strip().splitlines()[-1].split())
    assert main == worker == (os.cpu_count() or 1)
