"""Kubernetes' name checks, as the job rules use them; they live in `shared.kube.names` because
the simulator's API server applies the same rules to every object's metadata."""

from shared.kube.names import (
    LABEL_MAX,
    SUBDOMAIN_MAX,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    qualified_name_errors,
)

__all__ = [
    "LABEL_MAX",
    "SUBDOMAIN_MAX",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "qualified_name_errors",
]
