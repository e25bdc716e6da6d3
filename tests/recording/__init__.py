"""Scenario recorders: each module builds its objects through the real API server and saves the wire JSON."""
