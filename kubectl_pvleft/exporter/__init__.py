"""`serve`: every analysis kept live on the watch runtime, as Prometheus metrics.

- ``live``: one reflector per distinct stream (the analyses share what they read: PVs are listed once for
  leftovers, classes and pending), each analysis's stores fed from them, the analyses re-judged after each burst,
  the cloud censuses on an interval, and each stream's health (up, last list/event, relists, errors).
- ``metrics``: what a scrape sees, built from ``live`` at scrape time (prometheus_client's custom collector):
  a series that resolves disappears, and an analysis whose streams are down says so instead of reading as zero.

Above the analyses and the clouds, below the command line (cli/serve.py owns the HTTP server and the signals).
"""
