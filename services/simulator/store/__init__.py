"""The simulated apiserver's storage: objects, resourceVersions, the change feed, owners and GC, and
the rules every stored object passes (the kinds served, defaults, metadata and schema checks). Imports
nothing else of the simulator.
"""
