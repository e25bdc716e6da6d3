"""`python -m kubectl_pvleft` runs the same command line as the `kubectl-pvleft` console script."""

from kubectl_pvleft.cli.main import entry

entry()
