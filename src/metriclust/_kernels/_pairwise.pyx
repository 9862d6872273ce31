"""Bridge to csrc/pairwise.c (filled in by the kernel work)."""
