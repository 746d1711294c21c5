"""Pure: whether a newer decision about the same gang makes an older one not worth carrying out.

The scheduler decides a gang again only after it stopped counting its earlier decision (past the
time-to-live), so a controller that lags may hold several decisions of one gang, all but the
newest out of date (issue #15's overload spiral: each older one cost a leader check and an audit
of its refusal). The controller skips an older decision when the newest one of the gang on the
stream supersedes it (superseded.py reads that one). Only what is safe to skip is skipped:

- an enqueue, by a newer enqueue or placement (a placement admits the gang too);
- a placement, by a newer placement that binds every pod the older one would (a newer one for
  only some of the pods may be the rest of a gang too large to place at once: both stand);
- an unschedulable verdict, by any newer verdict, enqueue or placement (only the newest verdict
  is the gang's condition);
- an eviction never: nor does one supersede anything.

Newer means a later (epoch, cycle) of the same gang uid: a PodGroup made again under the same
name is another gang.
"""

from __future__ import annotations

from shared.messages import decisions as msg

Decision = msg.GangEnqueued | msg.GangPlaced | msg.GangUnschedulable | msg.PodsEvicted


def supersedes(newer: object, older: object) -> bool:
    """Whether `newer` (the newest decision of the gang) makes `older` not worth carrying out."""
    if not isinstance(newer, Decision) or not isinstance(older, Decision):
        return False
    if newer.gang_uid != older.gang_uid or (newer.epoch, newer.cycle) <= (older.epoch, older.cycle):
        return False
    match older:
        case msg.GangEnqueued():
            return isinstance(newer, msg.GangEnqueued | msg.GangPlaced)
        case msg.GangPlaced():
            if not isinstance(newer, msg.GangPlaced):
                return False
            again = {b.uid for b in newer.binds}
            return all(b.uid in again for b in older.binds)
        case msg.GangUnschedulable():
            return isinstance(newer, msg.GangUnschedulable | msg.GangEnqueued | msg.GangPlaced)
    return False
