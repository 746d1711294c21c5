"""Every label and annotation key Volcano and Phalanx write and read, with their exact spelling.

The one definition of each: the controller's pod and PodGroup builders, the scheduler's
projection and plugins, admission's rules, the watcher, the simulator's stand-ins and the CLI
import them from here, so that a misspelt key cannot silently break the link between a pod and
its job. (`shared.domain.runtime_estimate.EXPECTED_RUNTIME` stays beside the estimate it feeds:
`shared.volcano` builds on `shared.domain`.)
"""

from __future__ import annotations

from shared.volcano.job import JOB_API_VERSION
from shared.volcano.podgroup import PODGROUP_API_VERSION

# Pod <-> job links (batch.volcano.sh).
TASK_INDEX = "volcano.sh/task-index"
TASK_SPEC = "volcano.sh/task-spec"
JOB_NAME = "volcano.sh/job-name"
JOB_NAMESPACE = "volcano.sh/job-namespace"
QUEUE_NAME = "volcano.sh/queue-name"
JOB_VERSION = "volcano.sh/job-version"
JOB_RETRY_COUNT = "volcano.sh/job-retry-count"
TEMPLATE_UID = "volcano.sh/template-uid"
PARTITION_ID = "volcano.sh/partition-id"
JOB_FORWARDING = "volcano.sh/job-forwarding"
OUT_OF_SYNC = "volcano.sh/controller-out-of-sync"
DEFAULT_TASK_SPEC = "default"

# Pod <-> PodGroup links (scheduling.volcano.sh).
GROUP_NAME = "scheduling.k8s.io/group-name"
VOLCANO_GROUP_NAME = "scheduling.volcano.sh/group-name"
POD_QUEUE_NAME = "scheduling.volcano.sh/queue-name"  # on a pod; on a namespace, its default queue
GROUP_MIN_MEMBER = "scheduling.volcano.sh/group-min-member"

# Copied from the Job (or the pod) onto pods and PodGroups.
NUMA_POLICY = "volcano.sh/numa-topology-policy"
PREEMPTABLE = "volcano.sh/preemptable"
COOLDOWN_TIME = "volcano.sh/cooldown-time"
REVOCABLE_ZONE = "volcano.sh/revocable-zone"
# Phalanx: the W3C trace context admission writes on a Job (shared/tracing.py TRACEPARENT_ANNOTATION).
TRACEPARENT = "phalanx.io/traceparent"
JDB_MIN_AVAILABLE = "volcano.sh/jdb-min-available"
JDB_MAX_UNAVAILABLE = "volcano.sh/jdb-max-unavailable"
NETWORK_TOPOLOGY_MODE = "volcano.sh/network-topology-mode"
NETWORK_TOPOLOGY_HIGHEST_TIER = "volcano.sh/network-topology-highest-tier"

# Jobs, read by the CLI and the benchmark.
JOB_TYPE = "volcano.sh/job-type"
BENCHMARK = "volcano.sh/benchmark"
SLA_WAITING_TIME = "volcano.sh/sla-waiting-time"

# Queues.
CLOSED_BY_PARENT = "volcano.sh/closed-by-parent"
HIERARCHY = "volcano.sh/hierarchy"
HIERARCHY_WEIGHTS = "volcano.sh/hierarchy-weights"
# Phalanx: the namespaces whose jobs a queue accepts (shared/volcano/queue_access.py).
ALLOWED_NAMESPACES = "phalanx.io/allowed-namespaces"

# Task topology (the scheduler's task-topology plugin reads them from the Job's annotations).
TASK_TOPOLOGY_PREFIX = "volcano.sh/task-topology"
TASK_TOPOLOGY_AFFINITY = "volcano.sh/task-topology-affinity"
TASK_TOPOLOGY_ANTI_AFFINITY = "volcano.sh/task-topology-anti-affinity"
TASK_TOPOLOGY_ORDER = "volcano.sh/task-topology-task-order"

# HyperNodes: which discoverer made one.
NETWORK_TOPOLOGY_SOURCE = "volcano.sh/network-topology-source"
# PodGroups: the HyperNode the controller records a job's allocation in.
JOB_ALLOCATED_HYPERNODE = "volcano.sh/job-allocated-hypernode"

# The PodGroup Volcano makes for a pod with none: `podgroup-<uid of the pod's controller>`, or of
# the pod itself when it has no controller (the controller names it, the scheduler recognises it).
PODGROUP_PREFIX = "podgroup-"

# Phalanx's own: what the scheduler reads to estimate and price, and what it tells the user.
JOB_CLASS = "phalanx.io/job-class"
LAST_CHECKPOINT = "phalanx.io/last-checkpoint"
PREDICTED_START = "phalanx.io/predicted-start"

BATCH_API_VERSION = JOB_API_VERSION
SCHEDULING_API_VERSION = PODGROUP_API_VERSION
BUS_API_VERSION = "bus.volcano.sh/v1alpha1"
JOB_KIND = "Job"
