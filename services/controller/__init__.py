"""The controller: turns cluster facts into Volcano's lifecycle of Jobs, PodGroups and Queues.

`core/` holds the pure decisions (state machine, manifests, plugins, PodGroup and Queue rules);
the service shell around it consumes `cluster.*` events, calls those functions and applies the
effects they return to Kubernetes, idempotently.
"""
