"""The watcher: lists and watches the cluster and publishes each change to NATS (`cluster.*`)."""
