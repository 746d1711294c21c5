"""Imports every event module so that `envelope.decode` knows every registered type."""

from shared.messages import audit, cluster, decisions, jobs

__all__ = ["audit", "cluster", "decisions", "jobs"]
