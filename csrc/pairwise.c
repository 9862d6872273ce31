/* Filled in by the pairwise kernel work. */
#include "common.h"
