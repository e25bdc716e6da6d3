"""Re-record the wire JSON the unit tests read, from a fresh real control plane.

    python tests/record_wire.py            # all scenarios into tests/fixtures/wire/
    python tests/record_wire.py leftovers  # one scenario module of tests/recording/

Each scenario module builds its objects through the API server and saves the responses verbatim.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE / "cluster")]

from controlplane import ControlPlane, build  # noqa: E402

SCENARIOS = ("leftovers", "pending", "classes_claims", "snapshots", "workloads")
OUT = HERE / "fixtures" / "wire"


def main(argv: list[str]) -> int:
    names = argv or list(SCENARIOS)
    build()
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="pvleft-record-") as workdir:
        cp = ControlPlane(Path(workdir))
        cp.start()
        try:
            for name in names:
                importlib.import_module(f"recording.{name}").record(cp, OUT)
                print(f"recorded {name} into {OUT}")
        finally:
            cp.stop(keep_logs=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
