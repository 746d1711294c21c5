"""Volcano's scheduling actions, each a function over the cycle's shared `CycleContext`."""
