"""The simulated control plane beside the apiserver: stand-ins for kube-scheduler (default-scheduler
pods), kube-controller-manager (workloads, volumes, resource claims), KubeRay and Kubeflow's training
operator. They write through `admission/`'s verbs, as real controllers' requests would.
"""
