"""PostgreSQL storage: the schema (one writing service per table), the async engine, the outbox."""
