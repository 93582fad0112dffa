/* transport.c - the in-process transport: a mailbox per actor. */
#include "runtime/transport.h"

#include <stdlib.h>

/* One name per kind, by designated initializer: a kind added at the end of
 * the enum without a name here fails to compile; one added in the middle
 * reads "unknown", never past the table. */
static const char *const msg_names[] = {
	[AKK_MSG_FORWARD] = "forward",
	[AKK_MSG_BACKWARD] = "backward",
	[AKK_MSG_VALIDATE] = "validate",
	[AKK_MSG_SYNC] = "sync",
	[AKK_MSG_INTERRUPT] = "interrupt",
	[AKK_MSG_STOP] = "stop",
	[AKK_MSG_SNAPSHOT] = "snapshot",
	[AKK_MSG_STATE] = "state",
	[AKK_MSG_REDUCED] = "reduced",
	[AKK_MSG_LOSS] = "loss",
};
_Static_assert(sizeof(msg_names) / sizeof(msg_names[0]) == AKK_MSG_NKINDS,
	       "every message kind needs a name in msg_names");

const char *akk_msg_name(int kind)
{
	return kind >= 0 && kind < AKK_MSG_NKINDS && msg_names[kind] ?
	       msg_names[kind] : "unknown";
}

int akk_transport_init(struct akk_transport *t, int nactors, int cap)
{
	t->boxes = calloc(nactors, sizeof(*t->boxes));
	t->nactors = nactors;
	t->actor_rank = NULL;
	t->rank = 0;
	t->link = NULL;
	t->ops = NULL;
	t->workers = NULL;
	if (!t->boxes)
		return -1;
	for (int i = 0; i < nactors; i++)
		if (akk_mailbox_init(&t->boxes[i], sizeof(struct akk_msg), cap)) {
			akk_transport_release(t);
			return -1;
		}
	return 0;
}

void akk_transport_release(struct akk_transport *t)
{
	if (t->ops)
		t->ops->release(t);
	for (int i = 0; t->boxes && i < t->nactors; i++)
		akk_mailbox_release(&t->boxes[i]);
	free(t->boxes);
	t->boxes = NULL;
}

int akk_send(struct akk_transport *t, int to, const struct akk_msg *m)
{
	if (t->actor_rank && t->actor_rank[to] != t->rank)
		return t->ops ? t->ops->post(t, to, m) : -1;
	return akk_mailbox_send(&t->boxes[to], m);
}

int akk_recv(struct akk_transport *t, int self, struct akk_msg *m)
{
	return akk_mailbox_recv(&t->boxes[self], m);
}

void akk_transport_close(struct akk_transport *t)
{
	for (int i = 0; i < t->nactors; i++)
		akk_mailbox_close(&t->boxes[i]);
}
