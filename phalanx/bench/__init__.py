"""`phalanx bench NAME`: end-to-end scheduling benchmarks of the whole stack on the simulator.

workloads.py says what each scenario creates (pure data); probes.py reads the counters of the
running processes (CPU, API writes, JetStream messages, PostgreSQL transactions); figures.py
turns the simulator's audit of pod creations and bindings into throughput and latency (pure);
runner.py starts a stack, drives the load and collects; report.py writes the results file.
"""
