/* actors.c - the failure every actor of a run reports through. */
#include "runtime/actors.h"

void akk_run_fail(struct akk_run *r, const struct akk_err *e)
{
	pthread_mutex_lock(&r->mu);
	if (!r->failed) {
		r->failed = 1;
		r->err = *e;
	}
	pthread_mutex_unlock(&r->mu);
	akk_transport_close(&r->tr);
	akk_workers_poke(&r->workers);	/* the run's end is near */
	if (!r->root)
		return;
	akk_mailbox_close(&r->tprov.ready);
	akk_mailbox_close(&r->tprov.free);
	if (r->val) {
		akk_mailbox_close(&r->vprov.ready);
		akk_mailbox_close(&r->vprov.free);
	}
}

int akk_run_failed(struct akk_run *r)
{
	int failed;

	pthread_mutex_lock(&r->mu);
	failed = r->failed;
	pthread_mutex_unlock(&r->mu);
	return failed;
}
