"""Admission: Volcano's validating and mutating webhooks for Jobs, Queues and PodGroups.

`rules/` holds the pure defaulting and validation rules, `review.py` turns an AdmissionReview
request into its response with them. The HTTPS shell around both loads an `AdmissionContext`
(queues, priority classes, ...) and calls `review.review(...)`.
"""
