"""HTML of each console page, rendered on the server from the read model's plain data.

Pure functions: data in, escaped HTML out. Every page shares `layout` (navigation, a skip link,
the live-update script); `fragment=True` gives only the <main> content, which the script swaps in
when the audit stream says something changed.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from html import escape
from typing import Any
from urllib.parse import quote, urlencode

from services.console.page_rows import Condition, JobDetail, JobRow, NodeView, QueueSummary, TaskRow

PAGES = (("/queues", "Queues"), ("/jobs", "Jobs"), ("/nodes", "Nodes"))
# The jobs list's age filter: created within this long.
AGES = {"1h": 3600, "6h": 6 * 3600, "24h": 86400, "7d": 7 * 86400}
GIB = 1000 * 2**30


def layout(title: str, current: str, body: str, *, fragment: bool) -> str:
    if fragment:
        return body
    links = "".join(
        f'<li><a href="{path}"{" aria-current=page" if path == current else ""}>{label}</a></li>'
        for path, label in PAGES
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)} · Phalanx</title>
<link rel="stylesheet" href="/static/console.css">
<script src="/static/live.js" defer></script>
</head><body>
<a class="skip" href="#main">Skip to content</a>
<header><span class="brand">Phalanx</span><nav aria-label="Sections"><ul>{links}</ul></nav>
<p id="live" role="status" aria-live="polite">connecting to the audit stream…</p></header>
<main id="main" tabindex="-1">{body}</main>
</body></html>"""


def amount(resource: str, milli: int) -> str:
    """A milli-unit amount as people read it: cores, GiB, or a count."""
    if resource == "memory":
        return f"{milli / GIB:.1f} GiB"
    value = milli / 1000
    return f"{value:g}" if value == int(value) else f"{value:.2f}"


def _bar(resource: str, used: int, limit: int | None, deserved: int | None) -> str:
    if not limit:
        return f'<span class="amount">{amount(resource, used)} (no limit)</span>'
    share = min(1.0, used / limit)
    mark = ""
    if deserved:
        left = min(100.0, 100 * deserved / limit)
        mark = f'<span class="deserved" style="left:{left:.1f}%" title="deserved"></span>'
    label = f"{amount(resource, used)} of {amount(resource, limit)}"
    over = " over" if deserved and used > deserved else ""
    if deserved:
        label += f", deserved {amount(resource, deserved)}"
    return (
        f'<span class="bar" role="meter" aria-valuemin="0" aria-valuemax="{limit}" aria-valuenow="{used}"'
        f' aria-label="{escape(resource)}: {escape(label)}"><span class="fill{over}"'
        f' style="width:{100 * share:.1f}%"></span>{mark}</span> <span class="amount">{escape(label)}</span>'
    )


def _span(seconds: float) -> str:
    if seconds >= 5400:
        return f"{seconds / 3600:.0f} hours"
    if seconds >= 90:
        return f"{seconds / 60:.0f} minutes"
    return "minute"


def share_chart(samples: list[tuple[datetime, float]], now: datetime, hours: float) -> str:
    """A queue's share as a small inline SVG line, the deserved share (1) as a dashed rule; its
    accessible name says the figures the line shows.

    The time axis runs from the first sample (or `hours` ago, whichever is later) to now, so a
    history younger than the window fills the chart instead of crowding at its right edge."""
    if not samples:
        return '<span class="muted">no samples</span>'
    width, height = 160, 36
    top = max(1.25, max(share for _, share in samples) * 1.1)
    span = max(60.0, min(hours * 3600, now.timestamp() - samples[0][0].timestamp()))
    start = now.timestamp() - span

    def x(moment: datetime) -> float:
        return max(0.0, min(width, (moment.timestamp() - start) / span * width))

    def y(share: float) -> float:
        return height - min(share, top) / top * height

    points = " ".join(f"{x(moment):.1f},{y(share):.1f}" for moment, share in samples)
    shares = [share for _, share in samples]
    label = (
        f"share over the last {_span(span)}: now {shares[-1]:.2f}, peak {max(shares):.2f},"
        f" low {min(shares):.2f} (1 is the deserved share)"
    )
    line = (
        f'<polyline points="{points}" class="share-line"/>'
        if len(samples) > 1
        else f'<circle cx="{x(samples[0][0]):.1f}" cy="{y(shares[0]):.1f}" r="2" class="share-dot"/>'
    )
    return (
        f'<svg class="share" role="img" aria-label="{escape(label)}" viewBox="0 0 {width} {height}"'
        f' width="{width}" height="{height}"><title>{escape(label)}</title>'
        f'<line x1="0" x2="{width}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}" class="share-deserved"/>{line}</svg>'
    )


def queues_page(
    queues: list[QueueSummary],
    total: dict[str, int],
    history: dict[str, list[tuple[datetime, float]]] | None = None,
    *,
    now: datetime,
    hours: float = 6,
) -> str:
    """`total`: the cluster's schedulable resources, the bar's end for a queue without capability;
    `history`: each queue's share samples of the last `hours`."""
    history = history or {}
    rows = []
    for q in queues:
        resources = sorted(set(q.allocated) | set(q.capability) | set(q.deserved) or {"cpu", "memory"})
        bars = "".join(
            f"<li><span class=res>{escape(r)}</span> "
            f"{_bar(r, q.allocated.get(r, 0), q.capability.get(r) or total.get(r), q.deserved.get(r))}"
            "</li>"
            for r in resources
        )
        parent = f' <span class="muted">in {escape(q.parent)}</span>' if q.parent else ""
        rows.append(
            f'<tr><th scope="row"><a href="/jobs?queue={quote(q.name)}">{escape(q.name)}</a>{parent}</th>'
            f"<td>{q.weight}</td><td>{escape(q.state)}</td><td><ul class=bars>{bars}</ul></td>"
            f'<td class="num">{q.pending_gangs}</td><td class="num">{q.running_gangs}</td>'
            f"<td>{share_chart(history.get(q.name, []), now, hours)}</td></tr>"
        )
    return (
        "<h1>Queues</h1><p class=muted>Allocated against capability (or the cluster, where a queue"
        " has none); the tick marks the deserved share. The line is the queue's share (allocated over"
        " deserved) over the last hours; the dashed rule is its deserved share.</p>"
        '<table><caption class="visually-hidden">Queues</caption><thead><tr><th scope=col>Queue</th>'
        "<th scope=col>Weight</th><th scope=col>State</th><th scope=col>Allocated</th>"
        "<th scope=col>Pending gangs</th><th scope=col>Running gangs</th>"
        f"<th scope=col>Share, last {hours:g} h</th></tr></thead>"
        f"<tbody>{''.join(rows) or _empty(7, 'no queues')}</tbody></table>"
    )


def _options(name: str, label: str, values: Iterable[str], chosen: str | None) -> str:
    options = "".join(
        f'<option value="{escape(v)}"{" selected" if v == chosen else ""}>{escape(v)}</option>'
        for v in values
    )
    return (
        f'<label for="f-{name}">{label}</label>'
        f'<select id="f-{name}" name="{name}"><option value="">any</option>{options}</select>'
    )


def _age(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return ""
    seconds = int((now - moment).total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{max(seconds, 0)}s"


def _phase(phase: str | None) -> str:
    return f'<span class="phase phase-{escape((phase or "").lower())}">{escape(phase or "—")}</span>'


def jobs_page(
    jobs: list[JobRow],
    filters: dict[str, str | None],
    choices: dict[str, list[str]],
    *,
    now: datetime,
) -> str:
    form = (
        '<form class="filters" method="get" action="/jobs" aria-label="Filter jobs">'
        + "".join(
            _options(k, k.capitalize(), choices[k], filters.get(k)) for k in ("namespace", "queue", "phase")
        )
        + _options("age", "Created within", AGES, filters.get("age"))
        + '<button type="submit">Filter</button></form>'
    )
    rows = "".join(
        f'<tr><th scope="row"><a href="{job_href(j.namespace, j.name)}">{escape(j.name)}</a></th>'
        f"<td>{escape(j.namespace)}</td><td>{escape(j.queue)}</td><td>{_phase(j.phase)}</td>"
        f'<td class="num">{j.min_member}</td><td>{_age(j.created_at or j.updated_at, now)}</td></tr>'
        for j in jobs
    )
    return (
        f"<h1>Jobs</h1>{form}"
        '<table id="jobs"><caption class="visually-hidden">Jobs</caption><thead><tr><th scope=col>Job</th>'
        "<th scope=col>Namespace</th><th scope=col>Queue</th><th scope=col>Phase</th>"
        "<th scope=col>Min members</th><th scope=col>Age</th></tr></thead>"
        f"<tbody>{rows or _empty(6, 'no jobs match')}</tbody></table>"
    )


def job_href(namespace: str, name: str) -> str:
    return f"/jobs/{quote(namespace)}/{quote(name)}"


def job_page(
    detail: JobDetail, tasks: list[TaskRow], conditions: list[Condition], timeline: list[dict[str, Any]]
) -> str:
    job = detail.job
    running = sum(1 for p in detail.pods if p.node and p.phase in ("Pending", "Running"))
    progress = f"{running} of {job.min_member} gang members placed" if job.min_member else ""
    why = ""
    if detail.verdict and job.phase in ("Pending", "Inqueue", "Restarting"):
        v = detail.verdict
        why = (
            '<section id="why" aria-labelledby="why-h"><h2 id="why-h">Why it waits</h2>'
            f"<p><strong>{escape(v.reason)}</strong> ({escape(v.condition_reason)})</p>"
            f"<p class=message>{escape(v.message)}</p></section>"
        )
    conds = "".join(
        f"<tr><td>{escape(c.type)}</td><td>{escape(c.status)}</td><td>{escape(c.reason)}</td>"
        f"<td>{escape(c.message)}</td><td>{escape(c.time)}</td></tr>"
        for c in conditions
    )
    task_rows = "".join(
        f"<tr><td>{escape(t.name)}</td><td class=num>{t.replicas}</td>"
        f"<td class=num>{t.min_available if t.min_available is not None else t.replicas}</td></tr>"
        for t in tasks
    )
    pods = "".join(
        f"<tr><td>{escape(p.name)}</td><td>{escape(p.task or '')}</td><td>{_phase(p.phase)}</td>"
        f"<td>{escape(p.node or 'not placed')}</td></tr>"
        for p in detail.pods
    )
    events = "".join(_timeline_item(e) for e in timeline) or "<li>no events yet</li>"
    queue_link = f'<a href="/jobs?queue={quote(job.queue)}">{escape(job.queue)}</a>'
    return (
        f"<h1>Job {escape(job.namespace)}/{escape(job.name)}</h1>"
        f"<p>Phase {_phase(job.phase)} · queue {queue_link}"
        f" · PodGroup {escape(job.podgroup)} {_phase(detail.podgroup_phase)} · {escape(progress)}</p>"
        f"{why}"
        + _table("Tasks", "tasks", ("Task", "Replicas", "Min available"), task_rows, "unknown")
        + _table("Pods", "pods", ("Pod", "Task", "Phase", "Node"), pods, "no pods yet")
        + _table(
            "PodGroup conditions",
            "conditions",
            ("Type", "Status", "Reason", "Message", "Since"),
            conds,
            "none",
        )
        + f'<h2>Audit timeline</h2><ol id="timeline" class="timeline">{events}</ol>'
    )


def _table(title: str, ident: str, headers: tuple[str, ...], rows: str, empty: str) -> str:
    head = "".join(f"<th scope=col>{h}</th>" for h in headers)
    body = rows or _empty(len(headers), empty)
    return (
        f'<h2 id="{ident}-h">{title}</h2><table id="{ident}" aria-labelledby="{ident}-h">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _timeline_item(document: dict[str, Any]) -> str:
    data = document.get("data") or {}
    text = f"{data.get('service')}.{data.get('action')} {data.get('kind')} {data.get('name')}"
    details: dict[str, Any] = data.get("details") or {}
    said = [str(data[k]) for k in ("outcome", "reason", "message") if data.get(k)]
    said += [f"{k}={details[k]}" for k in ("previous", "phase", "node") if details.get(k)]
    extra = " ".join(said)
    moment = escape(str(document.get("time", "")))
    return (
        f'<li><time datetime="{moment}">{moment[11:23]}'
        f"</time> <span class=event>{escape(text)}</span> <span class=muted>{escape(extra)}</span></li>"
    )


def nodes_page(nodes: list[NodeView]) -> str:
    cells = []
    for n in nodes:
        heat = round(n.load() * 10)
        marks = [m for m, on in (("cordoned", n.cordoned), ("NotReady", not n.ready)) if on]
        detail = ", ".join(
            f"{r} {amount(r, n.used.get(r, 0))} of {amount(r, total)}"
            for r, total in sorted(n.allocatable.items())
            if r in ("cpu", "memory") or n.used.get(r)
        )
        label = f"{n.name}: {round(100 * n.load())}% used; {detail}" + (
            f"; {', '.join(marks)}" if marks else ""
        )
        css = " ".join(["cell", f"heat-{heat}", *(f"mark-{m.lower()}" for m in marks)])
        badge = "".join(f'<span class="badge">{m}</span>' for m in marks)
        cells.append(
            f'<li class="{css}" tabindex="0" title="{escape(label)}" aria-label="{escape(label)}">'
            f'<span class="node-name">{escape(n.name)}</span>{round(100 * n.load())}% {badge}</li>'
        )
    legend = "".join(f'<span class="cell heat-{h}" aria-hidden="true"></span>' for h in range(0, 11, 2))
    return (
        "<h1>Nodes</h1><p class=muted>Each cell is a node, shaded by its fullest resource (cpu or memory)."
        f' Hatched: cordoned or NotReady.</p><p class="legend">0% {legend} 100%</p>'
        f'<ul id="heatmap" class="heatmap" aria-label="Node allocation">'
        f"{''.join(cells) or '<li>no nodes</li>'}</ul>"
    )


def not_found(what: str) -> str:
    return f"<h1>Not found</h1><p>{escape(what)}</p><p><a href='/jobs'>All jobs</a></p>"


def _empty(columns: int, text: str) -> str:
    return f'<tr><td colspan="{columns}" class="muted">{escape(text)}</td></tr>'


def query_string(filters: dict[str, str | None]) -> str:
    return urlencode({k: v for k, v in filters.items() if v})
