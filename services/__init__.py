"""Phalanx's services: watcher, admission, controller, scheduler, and the simulated cluster."""
