"""The controller's pure core: Volcano's job lifecycle, manifests, plugins, PodGroups and Queues.

Everything here takes plain data (frozen dataclasses, Kubernetes JSON dicts) and returns plain
data: no I/O, no clock, no randomness. The controller shell feeds it what the watcher observed
and applies the effects it returns. See docs/lifecycle.md for the map of modules.
"""
