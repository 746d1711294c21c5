"""Unit tests of the scheduling core (services/scheduler/core)."""
