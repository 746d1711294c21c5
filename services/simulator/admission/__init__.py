"""A write's way from the verb to the store: the verbs (`operations.py`), admission webhooks, request
decoding, patches, server-side apply, unknown fields, the eviction verdict, the write rate limit and
the audit record. Writes through `store/`; the controllers in `control/` write through it.
"""
