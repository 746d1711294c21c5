"""The simulated nodes and their kubelets: nodes from the nodes file, the pod statuses a kubelet writes,
the DRA drivers' ResourceSlices, and the trace of pod placements. Reads and writes `store/` directly.
"""
