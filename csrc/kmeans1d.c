/* Batched 1-D k-means on the columns of a matrix: see kmeans1d.h. */
#include "kmeans1d.h"
#include "dispatch.h"
#include "kmeans.h"   /* the k-means core's chunk, segment and block sizes */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define REAL double
#define FN(name) name##_f64
#include "kmeans1d_impl.h"
#undef REAL
#undef FN

#define REAL float
#define FN(name) name##_f32
#include "kmeans1d_impl.h"
#undef REAL
#undef FN
