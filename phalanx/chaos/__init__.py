"""`phalanx chaos`: a seeded soak of gang workloads under seeded faults, judged by an oracle.

plan (what to submit and which fault to inject when, from a seed; pure) → faults (SIGKILL and
restart a service, SIGSTOP the scheduler past its lease, restart NATS or PostgreSQL) → runner (the
stack, the timeline, sampled checks, the wait for quiescence) → oracle (the invariants, over the
simulated API server's own pod trace; pure) → report (the figures, as text).
"""
