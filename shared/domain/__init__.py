"""Pure domain values shared by every service: quantities, resource vectors, the retry vocabulary.
Nothing in this package does I/O."""
