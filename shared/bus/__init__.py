"""The message bus: NATS JetStream streams, idempotent publishing, ordered pull consumers."""
