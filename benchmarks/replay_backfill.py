"""Reservation backfill measured with `phalanx replay` on the shipped traces; writes the results file.

    .venv/bin/python -m benchmarks.replay_backfill --out benchmarks/results/backfill.md

For each trace in benchmarks/traces/: Volcano's ordering (allocate, no reservation), reservation
backfill and a strict reservation with no backfill, with the users' declared estimates and with
exact ones; then reservation backfill under estimates of falling quality, for the prediction
error. Everything is virtual time: the figures do not depend on the machine.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from phalanx.replay import engine, report, trace
from services.scheduler.core import parse_conf

TRACES = Path(__file__).parent / "traces"
MODES = ("volcano", "backfill", "backfill-depth4", "strict")
QUALITIES = (
    "exact",
    "over:1.5",
    "over:3",
    "noisy:0.25",
    "noisy:0.5",
    "noisy:1.0",
    "learned",
    "trace",
    "none",
)


def _row(label: str, estimates: str, result: report.Figures) -> str:
    largest = list(result.waits)[-1]
    count, mean, p95 = result.waits[largest]
    small = result.waits.get("1", (0, 0.0, 0.0))
    prediction = "-" if result.prediction_median is None else f"{result.prediction_median:.1%}"
    return (
        f"| {label} | {estimates} | {result.utilization['all']:.1%} | {report.hours(result.makespan)} | "
        f"{report.hours(small[1])} / {report.hours(small[2])} | "
        f"{largest} ({count}): {report.hours(mean)} / {report.hours(p95)} | {prediction} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    confs = {mode: parse_conf((TRACES / f"{mode}.conf").read_text()) for mode in MODES}
    lines = [
        "# Reservation backfill, measured with `phalanx replay`",
        "",
        "Made by `.venv/bin/python -m benchmarks.replay_backfill --out benchmarks/results/backfill.md`",
        "(traces: `benchmarks/traces/generate.py`; configurations: `benchmarks/traces/*.conf`, Volcano's",
        "default tiers with binpack, without proportion; virtual time, so the figures do not depend on the",
        "machine). Waits are mean / p95; the largest size class is the largest jobs' GPUs in total;",
        "prediction error is |predicted - actual start| / wait, median over the jobs that waited, each",
        "judged on the prediction made when it arrived.",
        "",
    ]
    for path in sorted(TRACES.glob("*.json")):
        loaded = trace.load(path)
        lines += [f"## {loaded.name}", "", loaded.description, ""]
        lines += [
            "| ordering | estimates | utilization | makespan | 1-GPU wait "
            "| largest jobs' wait | prediction error |",
            "|---|---|---|---|---|---|---|",
        ]
        done: dict[tuple[str, str], report.Figures] = {}
        for estimates in ("trace", "exact"):
            for mode in MODES:
                started = time.monotonic()
                result = done[(mode, estimates)] = report.figures(
                    engine.run(loaded, confs[mode], estimates=estimates)
                )
                lines.append(_row(mode, estimates, result))
                print(path.name, mode, estimates, f"{time.monotonic() - started:.0f} s", flush=True)
        lines += [
            "",
            "Reservation backfill under estimates of falling quality (`--estimates`):",
            "",
            "| estimates | utilization | largest jobs' p95 wait | median error / wait | p90 error / wait "
            "| waiting jobs predicted |",
            "|---|---|---|---|---|---|",
        ]
        for estimates in QUALITIES:
            result = done.get(("backfill", estimates)) or report.figures(
                engine.run(loaded, confs["backfill"], estimates=estimates)
            )
            median = "-" if result.prediction_median is None else f"{result.prediction_median:.1%}"
            p90 = "-" if result.prediction_p90 is None else f"{result.prediction_p90:.1%}"
            share = f"{result.predicted_share:.0%}"
            largest = report.hours(list(result.waits.values())[-1][2])
            lines.append(
                f"| {estimates} | {result.utilization['all']:.1%} | {largest} | {median} | {p90} | {share} |"
            )
            print(path.name, "quality", estimates, flush=True)
        lines.append("")
    args.out.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
