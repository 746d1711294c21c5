"""Wire contracts between the services: the CloudEvents envelope, subjects, one model per event type."""
