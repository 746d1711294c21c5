"""vcctl's commands for Phalanx: `phalanx job|queue ...` and the `vcctl` entry point.

The user's side of the flow: these commands talk only to the Kubernetes API (a real cluster or
the simulator) with vcctl's flags, columns and messages, so scripts written for Volcano keep
working; suspend, resume, open and close go through bus.volcano.sh Commands, which the controller
carries out. `job why` and `queue why` also read the scheduler's tables (read-only) and the audit
stream to explain a wait.

kube     the API client, Volcano's objects, Commands, and errors a user can act on (exit codes)
common   the flags every command shares, and how a failure is printed
output   vcctl's tables, and -o json|yaml|wide
views    `job view`'s text
jobs     job run / list / view / suspend / resume / delete
queues   queue create / list / get / operate / delete
why      job why / queue why
explain  the pure part of `why`: plain facts in, sentences out
insight  what `why` reads besides the API: PostgreSQL (read-only) and the audit stream
app      the `vcctl` Typer app, and `register`, which adds the same commands to `phalanx`
"""
