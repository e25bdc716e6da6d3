"""kubectl-pvleft: read-only answers to the storage questions operators ask at 3am."""

__version__ = "0.1.0"
