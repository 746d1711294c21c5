"""Phalanx's shared library: the domain values, Volcano's objects, messages, bus, storage and infra
that every service stands on. Libraries only: no service logic lives here."""
