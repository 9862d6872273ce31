/* Filled in by the gram kernel work. */
#include "common.h"
