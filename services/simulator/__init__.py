"""The simulated Kubernetes cluster: an in-memory apiserver plus the kubelets (DESIGN.md §8)."""
