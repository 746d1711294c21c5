"""Fair share over time measured with `phalanx replay` on the shipped traces; writes the results file.

    .venv/bin/python -m benchmarks.replay_fairness --out benchmarks/results/fairness.md

For each trace in benchmarks/traces/ (the demand-limited philly- and helios-like, and the contended
one of generate_contended.py): queues ordered by nothing (drf alone: by name), by Volcano's
instantaneous proportion, by fairshare's decayed usage at several half-lives, by fairshare on top
of proportion, and with fairshare shaping proportion's deserved share (`deservedByUsage`). The
figure is Jain's index of each queue's share over its entitlement (phalanx/replay/fairness.py)
over the trace's first day, and the mean of its hourly values.
Everything is virtual time: the figures do not depend on the machine.
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from phalanx.replay import engine, fairness, trace
from services.scheduler.core import parse_conf

TRACES = Path(__file__).parent / "traces"
CONFS = (
    ("drf alone (queues by name)", "volcano.conf", None),
    ("proportion (instantaneous)", "proportion.conf", None),
    ("fairshare, halfLife 24h", "fairshare.conf", "24h"),
    ("fairshare, halfLife 6h", "fairshare.conf", "6h"),
    ("fairshare, halfLife 1h", "fairshare.conf", "1h"),
    ("fairshare 24h + proportion", "fairshare-proportion.conf", "24h"),
    ("fairshare 24h shapes proportion's deserved", "fairshare-deserved.conf", "24h"),
    ("fairshare 6h shapes proportion's deserved", "fairshare-deserved.conf", "6h"),
)
KEPT = "## What this shows"  # the hand-written reading below the tables survives a re-run


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    previous = args.out.read_text() if args.out.exists() else ""
    kept = previous[previous.index(KEPT) :] if KEPT in previous else ""
    lines = [
        "# Fair share over time: decayed usage against instantaneous proportion",
        "",
        "Measured with `.venv/bin/python -m benchmarks.replay_fairness --out benchmarks/results/fairness.md`",
        "(virtual time; the same every run). Jain's index of share over entitlement: 1 is every queue",
        "holding exactly its weight's part of the GPUs among the queues that had work; 1/3 is one",
        "queue holding everything. Day: over the trace's first 24 h; hourly: the mean of the 24",
        "hourly indices. Shares are of the cluster's GPUs over the day (weights vision 2, nlp 2,",
        "speech 1).",
        "",
    ]
    for path in sorted(TRACES.glob("*.json")):
        loaded = trace.load(path)
        lines += [
            f"## {path.name}",
            "",
            "| queues ordered by | Jain, day | Jain, hourly mean | GPU share over the day | cycles |",
            "|---|---|---|---|---|",
        ]
        for label, conf_name, half in CONFS:
            text = (TRACES / conf_name).read_text()
            if half is not None:
                text = re.sub(r"halfLife: \S+", f"halfLife: {half}", text)
            started = time.perf_counter()
            result = engine.run(loaded, parse_conf(text))
            measured = fairness.measure(result)
            shares = ", ".join(f"{q} {s:.1%}" for q, s in measured.day_share.items())
            figures = f"{measured.day_index:.3f} | {measured.hourly_mean:.3f} | {shares}"
            lines.append(f"| {label} | {figures} | {result.cycles} |")
            print(path.name, label, f"{time.perf_counter() - started:.1f}s", flush=True)
        lines.append("")
    args.out.write_text("\n".join(lines) + ("\n" + kept if kept else ""))


if __name__ == "__main__":
    main()
