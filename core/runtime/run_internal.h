/* run_internal.h - a run's inside for the tests that look inside one:
 * the actor structs (actors.h) and a run planned in caller-provided
 * storage. Callers use run.h only.
 *
 * akk_run_init plans all memory (gates, tapes, batch pools, mailboxes)
 * in r; akk_run_create is it plus the allocation. */
#ifndef AKK_RUN_INTERNAL_H
#define AKK_RUN_INTERNAL_H

#include "runtime/actors.h"
#include "runtime/run.h"

int akk_run_init(struct akk_run *r, const struct akk_model *m,
		 const struct akk_dataset *train, const struct akk_dataset *val,
		 const struct akk_run_config *cfg, struct akk_err *e);
void akk_run_release(struct akk_run *r);

#endif
