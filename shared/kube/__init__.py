"""Kubernetes access for the services that talk to the API: the watcher (read) and controller (write)."""
