"""Bridge to csrc/gram.c (filled in by the kernel work)."""
