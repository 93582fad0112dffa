/* world.c - MPI start and end, or nothing in a build without MPI. */
#include "runtime/world.h"

#include <stdlib.h>
#include <string.h>
#ifdef AKK_MPI
#include <mpi.h>
#endif

int akk_world_launched(void)
{
	return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
	       getenv("PMIX_RANK");
}

int akk_world_available(void)
{
#ifdef AKK_MPI
	return 1;
#else
	return 0;
#endif
}

int akk_world_init(struct akk_world *w, int *argc, char ***argv,
		   struct akk_err *e)
{
	memset(w, 0, sizeof(*w));
	w->size = w->local_size = 1;
#ifdef AKK_MPI
	int provided;
	const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");

	if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
		return akk_err_set(e, "cannot start MPI");
	if (provided < MPI_THREAD_SERIALIZED)
		return akk_err_set(e, "the MPI library does not support threads (MPI_THREAD_SERIALIZED)%s",
				   MPI_Finalize() == MPI_SUCCESS ? "" : "; MPI_Finalize failed");
	w->active = 1;
	/* Failures come back as return codes (each one checked, and the
	 * CLI ends the job with the reason) instead of aborting inside MPI;
	 * communicators duplicated from it inherit this. */
	if (MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) != MPI_SUCCESS ||
	    MPI_Comm_rank(MPI_COMM_WORLD, &w->rank) != MPI_SUCCESS ||
	    MPI_Comm_size(MPI_COMM_WORLD, &w->size) != MPI_SUCCESS) {
		w->rank = 0;
		w->size = 1;
		return akk_err_set(e, "MPI: cannot learn this process's rank");
	}
	w->local_size = local ? atoi(local) : 1;
	if (w->local_size < 1)
		w->local_size = 1;
	return 0;
#else
	(void)argc;
	(void)argv;
	return akk_err_set(e, "this akkctl was built without MPI; rebuild with 'make MPI=1' (needs libopenmpi-dev)");
#endif
}

int akk_world_finalize(struct akk_world *w, struct akk_err *e)
{
	int rc = 0;

#ifdef AKK_MPI
	if (w->active && MPI_Finalize() != MPI_SUCCESS)
		rc = akk_err_set(e, "MPI: MPI_Finalize failed");
#else
	(void)e;
#endif
	w->active = 0;
	return rc;
}

int akk_world_bcast(struct akk_world *w, long *v, int n)
{
#ifdef AKK_MPI
	if (w->active)
		return MPI_Bcast(v, n, MPI_LONG, 0, MPI_COMM_WORLD) == MPI_SUCCESS ? 0 : -1;
#endif
	(void)w;
	(void)v;
	(void)n;
	return 0;
}

int akk_world_check_split(size_t n, int batch, int ranks, struct akk_err *e)
{
	size_t step = (size_t)batch * (size_t)(ranks > 1 ? ranks : 1);
	size_t last = n % step ? n % step : step;	/* the last batch */

	if (ranks <= 1 || !n || last >= (size_t)ranks)
		return 0;
	return akk_err_set(e, "data parallel over %d ranks: the last batch of each epoch would leave a rank without samples; change schedule.batch_size",
			   ranks);
}
