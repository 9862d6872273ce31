"""Bridge to csrc/prototypes.c: LVQ and online SOM training runs (sequential).

Public classes and functions:

.. autosummary::

   lvq_train  -- LVQ1, LVQ2.1, LVQ3 and OLVQ1 training runs
   som_train  -- an online SOM training run
   VARIANTS   -- the LVQ variant codes

Sizes and index ranges are checked here before the C core touches a pointer.
"""

import numpy as np

from libc.stdint cimport int64_t
from metriclust._kernels._interrupt cimport interrupt_enter, interrupt_leave
from metriclust._kernels._status cimport check_status

cdef extern from "prototypes.h" nogil:
    int ml_lvq_train(const double *X, const int64_t *y, Py_ssize_t n, Py_ssize_t d,
                     double *protos, const int64_t *proto_labels, Py_ssize_t P,
                     const int64_t *order, Py_ssize_t T, int variant, double alpha0,
                     double window, double epsilon, double *rates, int64_t *n_moves)
    int ml_som_train(const double *X, Py_ssize_t n, Py_ssize_t d, double *W,
                     const double *grid, Py_ssize_t P, const int64_t *order,
                     Py_ssize_t T, double alpha0, double alpha1, double sigma0,
                     double sigma1)

VARIANTS = {"lvq1": 0, "lvq2.1": 1, "lvq3": 2, "olvq1": 3}


cdef _check_order(const int64_t[::1] order, Py_ssize_t n):
    cdef Py_ssize_t t
    for t in range(order.shape[0]):
        if order[t] < 0 or order[t] >= n:
            raise ValueError(f"order[{t}] = {order[t]} out of range for {n} rows")


def lvq_train(const double[:, ::1] X, const int64_t[::1] y, double[:, ::1] protos,
              const int64_t[::1] proto_labels, const int64_t[::1] order, variant,
              double alpha0, double window, double epsilon, double[::1] rates=None):
    """Run ``len(order)`` LVQ updates in place on ``protos``; returns the number of
    samples that moved a prototype."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], P = protos.shape[0]
    cdef Py_ssize_t T = order.shape[0]
    if n < 1 or d < 1 or P < 1:
        raise ValueError(f"X and prototypes must be non-empty, got {n}x{d}, P={P}")
    if y.shape[0] != n:
        raise ValueError(f"y has {y.shape[0]} entries, X has {n} rows")
    if protos.shape[1] != d:
        raise ValueError(f"prototypes have {protos.shape[1]} features, X has {d}")
    if proto_labels.shape[0] != P:
        raise ValueError(f"proto_labels has {proto_labels.shape[0]} entries, expected {P}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    cdef int code = VARIANTS[variant]
    cdef double *rp = NULL
    if code == 3:
        if rates is None or rates.shape[0] != P:
            raise ValueError(f"olvq1 needs rates of length {P}")
        rp = &rates[0]
    _check_order(order, n)
    cdef int64_t moves = 0
    cdef int status
    cdef const int64_t *op = &order[0] if T > 0 else NULL
    entered = interrupt_enter()
    with nogil:
        status = ml_lvq_train(&X[0, 0], &y[0], n, d, &protos[0, 0], &proto_labels[0], P,
                              op, T, code, alpha0, window, epsilon, rp, &moves)
    interrupt_leave(entered, status)
    check_status(status, "lvq_train", "invalid arguments")
    return int(moves)


def som_train(const double[:, ::1] X, double[:, ::1] W, const double[:, ::1] grid,
              const int64_t[::1] order, double alpha0, double alpha1, double sigma0,
              double sigma1):
    """Run ``len(order)`` online SOM updates in place on ``W``."""
    cdef Py_ssize_t n = X.shape[0], d = X.shape[1], P = W.shape[0], T = order.shape[0]
    if n < 1 or d < 1 or P < 1:
        raise ValueError(f"X and W must be non-empty, got {n}x{d}, P={P}")
    if W.shape[1] != d:
        raise ValueError(f"W has {W.shape[1]} features, X has {d}")
    if grid.shape[0] != P or grid.shape[1] != 2:
        raise ValueError(f"grid must have shape ({P}, 2), got ({grid.shape[0]}, {grid.shape[1]})")
    if not (alpha0 > 0 and alpha1 > 0 and sigma0 > 0 and sigma1 > 0):
        raise ValueError("learning rates and neighbourhood widths must be positive")
    _check_order(order, n)
    cdef int status
    cdef const int64_t *op = &order[0] if T > 0 else NULL
    entered = interrupt_enter()
    with nogil:
        status = ml_som_train(&X[0, 0], n, d, &W[0, 0], &grid[0, 0], P, op, T,
                              alpha0, alpha1, sigma0, sigma1)
    interrupt_leave(entered, status)
    check_status(status, "som_train", "invalid arguments")
