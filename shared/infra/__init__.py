"""Infrastructure for machines without Docker or a cluster: local NATS and PostgreSQL processes."""
