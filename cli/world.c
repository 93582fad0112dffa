/* world.c - starting MPI for a command and placing the gates. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Under mpirun, or when the config places a gate on another rank: start
 * MPI and place the gates (gate_rank stays NULL for one process). */
int cli_start_world(const struct akk_spec *s, struct akk_world *w,
		       int **gate_rank, struct akk_err *e)
{
	int remote = 0, rc;

	memset(w, 0, sizeof(*w));
	w->size = w->local_size = 1;
	for (int i = 0; i < s->ngates; i++)
		remote |= s->gates[i].rank > 0;
	if (!akk_world_launched()) {
		int *one = calloc(s->ngates, sizeof(int));
		/* names the gate and says to start the ranks with mpirun */
		rc = one ? akk_spec_place(s, 1, one, e) : akk_err_set(e, "out of memory");
		free(one);
		return remote ? rc : 0;
	}
	if (akk_world_init(w, NULL, NULL, e))
		return -1;
	if (w->size == 1 || s->sched.data_parallel)
		return 0;	/* one process, or every gate on every rank */
	if (!(*gate_rank = calloc(s->ngates, sizeof(int))))
		return akk_err_set(e, "out of memory");
	return akk_spec_place(s, w->size, *gate_rank, e);
}

