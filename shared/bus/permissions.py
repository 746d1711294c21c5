"""Who may publish and subscribe to what on NATS: one identity per service, plus a bootstrap and an auditor.

This table is the single source of the bus's least privilege. `shared.infra.nats_auth` renders it
into the configuration of the NATS servers Phalanx starts itself (`phalanx up`, the test fixtures)
and into `deploy/nats/nats.conf` for docker compose and real clusters; docs/security.md explains it.

Rules it encodes:
- only the scheduler publishes `decisions.>`, only the watcher `cluster.>`, only the controller
  `jobs.>`; each service publishes audit events under its own name only (`audit.<service>.>`);
- a consumer may create, read and acknowledge only its own durable consumer on its own stream, and
  dead-letter only under its own durable's subject;
- replies (JetStream acks, fetched messages) come to an inbox prefix of the identity's own
  (`_INBOX.<user>.>`), so no identity can read what is delivered to another;
- the streams are created and changed only by the bootstrap identity (`phalanx up`, the migration
  job); services merely look them up;
- the auditor reads `audit.>` and may not publish anything but JetStream API requests on AUDIT.
"""

from __future__ import annotations

from dataclasses import dataclass

from shared.messages import subjects

BOOTSTRAP = "bootstrap"
AUDITOR = "auditor"
SERVICES = ("watcher", "scheduler", "controller", "admission")
ROLES = (BOOTSTRAP, *SERVICES, AUDITOR)

JS_API = "$JS.API"


@dataclass(frozen=True)
class Grant:
    """The subjects one identity may publish to and subscribe to (everything else is denied)."""

    publish: tuple[str, ...]
    subscribe: tuple[str, ...]


def inbox_prefix(user: str) -> str:
    """Where replies to `user`'s requests arrive; its subscribe grant covers exactly this prefix."""
    return f"_INBOX.{user}"


# Each service's durable consumers: (stream, durable). Spelled here and in the composition roots.
CONTROLLER_REPLICAS = 16  # replica numbers 0..15, each with durables of its own (docs/scaling.md)
# The controller's durable on DECISIONS (replica 0's name; the scheduler reads its lag).
CONTROLLER_DECISIONS_DURABLE = "controller-decisions"


def replica_durable(durable: str, replica: int) -> str:
    """Replica 0 keeps the plain name (one replica is what it always was); others add their number."""
    return durable if replica == 0 else f"{durable}-{replica}"


CONSUMERS: dict[str, tuple[tuple[str, str], ...]] = {
    "scheduler": ((subjects.CLUSTER_STREAM, "scheduler-ingest"),),
    # Every controller replica reads every event (its cache is the whole cluster) through its own
    # durables; the replicas share the work by shard, not the stream (docs/scaling.md).
    "controller": tuple(
        (stream, replica_durable(durable, replica))
        for replica in range(CONTROLLER_REPLICAS)
        for stream, durable in (
            (subjects.CLUSTER_STREAM, "controller"),
            (subjects.DECISIONS_STREAM, CONTROLLER_DECISIONS_DURABLE),
        )
    ),
}

# Beyond their own durables: the scheduler reads how far the controller's decisions consumer lags
# (it holds new decisions back meanwhile, services/scheduler/decision_backlog.py); the controller
# reads the newest decision of a gang, to skip older ones it supersedes (services/controller/
# superseded.py). Both are reads of what each already may see.
READS: dict[str, tuple[str, ...]] = {
    "scheduler": (f"{JS_API}.CONSUMER.INFO.{subjects.DECISIONS_STREAM}.{CONTROLLER_DECISIONS_DURABLE}",),
    "controller": (f"{JS_API}.STREAM.MSG.GET.{subjects.DECISIONS_STREAM}",),
}

# What each service publishes as its own (beyond its audit events and dead letters).
OWN_SUBJECTS: dict[str, tuple[str, ...]] = {
    "watcher": (subjects.STREAM_SUBJECTS[subjects.CLUSTER_STREAM],),
    "scheduler": (subjects.STREAM_SUBJECTS[subjects.DECISIONS_STREAM],),
    "controller": (subjects.STREAM_SUBJECTS[subjects.JOBS_STREAM],),
    "admission": (),
}


def _stream_lookups() -> tuple[str, ...]:
    """Read-only stream lookups: a service waits until the bootstrap has created the streams."""
    return (f"{JS_API}.INFO", f"{JS_API}.STREAM.NAMES", f"{JS_API}.STREAM.INFO.*")


def _durable_consumer(stream: str, durable: str) -> tuple[str, ...]:
    """Create (or resume), inspect, pull from and acknowledge one durable consumer, and no other."""
    return (
        f"{JS_API}.CONSUMER.DURABLE.CREATE.{stream}.{durable}",
        f"{JS_API}.CONSUMER.CREATE.{stream}.{durable}",
        f"{JS_API}.CONSUMER.CREATE.{stream}.{durable}.>",
        f"{JS_API}.CONSUMER.INFO.{stream}.{durable}",
        f"{JS_API}.CONSUMER.MSG.NEXT.{stream}.{durable}",
        f"$JS.ACK.{stream}.{durable}.>",
        subjects.deadletter(stream, durable),
    )


def grant(role: str) -> Grant:
    """The grant of `role` (one of ROLES); a KeyError names an unknown role."""
    if role == BOOTSTRAP:
        return Grant(publish=(">",), subscribe=(">",))
    inbox = f"{inbox_prefix(role)}.>"
    if role == AUDITOR:
        audit = subjects.AUDIT_STREAM
        return Grant(
            publish=(
                *_stream_lookups(),
                # Ephemeral and ordered consumers on AUDIT only (`phalanx events watch`).
                f"{JS_API}.CONSUMER.CREATE.{audit}",
                f"{JS_API}.CONSUMER.CREATE.{audit}.>",
                f"{JS_API}.CONSUMER.INFO.{audit}.>",
                f"{JS_API}.CONSUMER.DELETE.{audit}.>",
                f"{JS_API}.CONSUMER.MSG.NEXT.{audit}.>",
                f"$JS.ACK.{audit}.>",
                f"$JS.FC.{audit}.>",
            ),
            subscribe=(subjects.STREAM_SUBJECTS[audit], inbox),
        )
    if role not in SERVICES:
        raise KeyError(f"unknown NATS role {role!r}; known: {', '.join(ROLES)}")
    publish = [*OWN_SUBJECTS[role], subjects.audit_of(role), *_stream_lookups()]
    for stream, durable in CONSUMERS.get(role, ()):
        publish += _durable_consumer(stream, durable)
    publish += READS.get(role, ())
    return Grant(publish=tuple(publish), subscribe=(inbox,))
