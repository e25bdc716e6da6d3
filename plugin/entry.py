"""The krew bundle's program (PyInstaller's entry script): ``kubectl-pvleft`` as pip's console script runs it,
and its shell completion when the first argument is ``__complete`` (what ``kubectl_complete-pvleft`` passes)."""

import os
import sys


def run() -> int:
    """The same program as pip's console script (kubectl_pvleft.cli.main:entry, or main where there is no entry)."""
    # Windows names the program kubectl-pvleft.exe; the command line calls itself `kubectl pvleft`.
    sys.argv[0] = os.path.splitext(sys.argv[0])[0] if sys.argv[0].lower().endswith(".exe") else sys.argv[0]
    if sys.argv[1:2] == ["__complete"]:
        from kubectl_pvleft.cli.completion import main as complete

        return complete(sys.argv[2:])
    from kubectl_pvleft.cli import main as cli
    if hasattr(cli, "entry"):  # signals handled as the console script handles them; raises SystemExit
        cli.entry()
    return cli.main()


if __name__ == "__main__":
    sys.exit(run())
