"""The scheduler service: a pure scheduling core (`core`) and the shell that feeds it snapshots."""
