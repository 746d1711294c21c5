"""The web console: a read-only view of queues, jobs, nodes and the audit stream, updated live."""
