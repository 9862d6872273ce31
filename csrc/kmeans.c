/* Filled in by the kmeans kernel work. */
#include "common.h"
