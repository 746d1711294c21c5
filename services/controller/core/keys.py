"""Label and annotation keys Volcano's controllers write and read, with their exact spelling.

Shared by the pod and PodGroup builders, the plugins and the observers that read pods back;
one place so that a misspelt key cannot silently break the link between a pod and its job.
"""

from __future__ import annotations

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
POD_QUEUE_NAME = "scheduling.volcano.sh/queue-name"
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

# Queues.
CLOSED_BY_PARENT = "volcano.sh/closed-by-parent"

BATCH_API_VERSION = "batch.volcano.sh/v1alpha1"
SCHEDULING_API_VERSION = "scheduling.volcano.sh/v1beta1"
BUS_API_VERSION = "bus.volcano.sh/v1alpha1"
JOB_KIND = "Job"
