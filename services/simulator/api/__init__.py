"""The simulated apiserver's HTTP face: routes, watch streams, discovery, OpenAPI, tables, the control API.

Above the composition root (`cluster.py`): it serves a built `Cluster` and is imported by nothing below.
"""
