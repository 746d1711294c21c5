"""The `phalanx` command line: run the system, its infrastructure, scenarios and the event stream."""
