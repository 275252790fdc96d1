/* shmemx.h - Sluice extensions to OpenSHMEM (none yet beyond shmem.h). */
#ifndef SHMEMX_H
#define SHMEMX_H
#include <shmem.h>
#endif
