"""Bridge to csrc/kmeans.c (filled in by the kernel work)."""
