"""Benchmarks: run as modules, figures recorded under benchmarks/results."""
