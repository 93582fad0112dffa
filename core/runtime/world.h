/* world.h - the processes of a run: one, or the ranks of an MPI job.
 *
 * akkctl starts MPI only when it runs under mpirun, so a plain run never
 * touches it (a config that places a gate on another rank is then an
 * error that says to use mpirun). Built without
 * MPI (make MPI=0), a run that needs it fails with a message saying so. */
#ifndef AKK_WORLD_H
#define AKK_WORLD_H

#include <stddef.h>

#include "base/err.h"

struct akk_world {
	int active;		/* MPI is initialised */
	int rank, size;		/* 0 and 1 when not active */
	int local_size;		/* ranks on this machine */
};

/* 1 when this process was started by mpirun (any launcher setting the
 * usual environment). */
int akk_world_launched(void);
/* Whether this akkctl was built with MPI. */
int akk_world_available(void);
/* Initialise MPI (thread level SERIALIZED: one communication thread per
 * rank makes every MPI call while the main thread waits). */
int akk_world_init(struct akk_world *w, int *argc, char ***argv,
		   struct akk_err *e);
/* End MPI if akk_world_init started it: 0, or -1 with e filled. */
int akk_world_finalize(struct akk_world *w, struct akk_err *e);
/* Broadcast n longs from rank 0 (collective; main thread only). */
int akk_world_bcast(struct akk_world *w, long *v, int n);
/* Data parallelism over `ranks` ranks: n samples in batches of
 * ranks x batch, each batch split over the ranks. Fails (without a
 * location: the caller knows where batch came from) when the last,
 * partial batch would leave a rank without samples. */
int akk_world_check_split(size_t n, int batch, int ranks, struct akk_err *e);

#endif
