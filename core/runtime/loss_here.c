/* loss_here.c - the loss beside the last gate (loss_here.h). */
#include "runtime/loss_here.h"

#include <math.h>

int akk_loss_here(struct akk_loss_here *h, const struct akk_msg *out,
		  struct akk_msg *back)
{
	struct akk_loss_chunk *c = &h->chunks[out->id % h->K];
	long n = (long)c->B * akk_model_outputs(h->model);
	double loss = akk_model_loss_heads(h->model, c->dlogits, out->data, c->labels,
					   c->targets, c->B, h->correct, h->reg,
					   h->heads);

	if (!isfinite(loss) || (h->max_loss > 0 && loss > h->max_loss))
		return 0;
	c->loss = loss;
	/* the group's mean gradient is the chunks' means weighted by their
	 * share of its samples */
	if (c->scale != 1.0)
		for (long i = 0; i < n; i++)
			c->dlogits[i] = (float)(c->dlogits[i] * c->scale);
	*back = *out;
	back->kind = AKK_MSG_BACKWARD;
	back->more = c->hold;
	back->data = c->dlogits;
	back->n = n;
	return 1;
}
