/* world.c - starting MPI for a command, placing the gates, and checking
 * that a data-parallel batch splits over the ranks. */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#ifdef AKK_MPI
#include <mpi.h>
#endif

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


/* The key `name` of mapping node n, or NULL. */
static yaml_node_t *key_of(yaml_document_t *d, yaml_node_t *n, const char *name)
{
	if (!n || n->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(d, p->key);
		if (k && k->type == YAML_SCALAR_NODE &&
		    !strcmp((const char *)k->data.scalar.value, name))
			return k;
	}
	return NULL;
}

/* The value of the pair whose key is k, in mapping n. */
static yaml_node_t *value_of(yaml_document_t *d, yaml_node_t *n, yaml_node_t *k)
{
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start;
	     p < n->data.mapping.pairs.top; p++)
		if (yaml_document_get_node(d, p->key) == k)
			return yaml_document_get_node(d, p->value);
	return NULL;
}

/* Where schedule.batch_size comes from, into e: the last --set that gave
 * it, else its key in the config file (the spec has checked the file, so
 * it parses), else the schedule: key or the whole file (the default). */
static void batch_size_place(const struct akk_spec *s, struct akk_err *e)
{
	static const char set[] = "schedule.batch_size=";
	yaml_parser_t p;
	yaml_document_t d;
	yaml_node_t *sched, *k = NULL;

	for (int i = s->nsets - 1; i >= 0; i--)
		if (!strncmp(s->sets[i], set, sizeof(set) - 1)) {
			snprintf(e->file, sizeof(e->file), "--set %s", s->sets[i]);
			e->line = e->col = 0;
			return;
		}
	snprintf(e->file, sizeof(e->file), "%s", s->path);
	e->line = s->sched.mark.line;
	e->col = s->sched.mark.col;
	if (!s->text || !yaml_parser_initialize(&p))
		return;
	yaml_parser_set_input_string(&p, (const unsigned char *)s->text, strlen(s->text));
	if (yaml_parser_load(&p, &d)) {
		yaml_node_t *root = yaml_document_get_root_node(&d);
		if ((sched = key_of(&d, root, "schedule")))
			k = key_of(&d, value_of(&d, root, sched), "batch_size");
		if (k) {
			e->line = (int)k->start_mark.line + 1;
			e->col = (int)k->start_mark.column + 1;
		}
		yaml_document_delete(&d);
	}
	yaml_parser_delete(&p);
}

int cli_check_split(const struct akk_spec *s, const struct akk_world *w,
		    size_t n, struct akk_err *e)
{
	if (!s->sched.data_parallel ||
	    !akk_world_check_split(n, s->sched.batch_size, w->size, e))
		return 0;
	batch_size_place(s, e);
	return -1;
}

/* Ends the process: the one MPI call that does lives here, in cli/. */
void cli_world_abort(struct akk_world *w, int code)
{
#ifdef AKK_MPI
	if (w->active)
		MPI_Abort(MPI_COMM_WORLD, code);
#endif
	(void)w;
	(void)code;
}
