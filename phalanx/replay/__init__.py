"""`phalanx replay TRACE`: a workload trace through the scheduling core in virtual time.

`trace.py` reads a trace (nodes, queues, jobs with arrivals, gang sizes, requests, runtimes and
estimates), `engine.py` runs it through the same `plan_cycle` the scheduler calls each cycle, with
no NATS, PostgreSQL or clock, and `report.py` turns what happened into per-queue figures. Traces
shipped with Phalanx are in `benchmarks/traces/`, made by `benchmarks/traces/generate.py`.
"""
