/* heads.c - the table of a network's heads that check prints. */
#include "heads.h"

#include "model/heads.h"

void cli_print_heads(FILE *f, const struct akk_spec *s, int outputs)
{
	if (!s->nheads)
		return;
	fprintf(f, "\n%-12s %-14s %8s  %-22s %8s  %s\n", "output", "slice", "size",
		"loss", "weight", "target");
	for (int i = 0; i < s->nheads; i++) {
		const struct akk_head_spec *h = &s->heads[i];
		int off = akk_head_offset(s, i, outputs), n = akk_head_size(s, i, outputs);
		char slice[32];

		snprintf(slice, sizeof(slice), "[%d, %d)", off, off + n);
		fprintf(f, "%-12s %-14s %8d  %-22s %8g  %s\n", h->name, slice, n,
			akk_loss_name(h->loss), (double)h->weight,
			akk_head_target_names[h->target]);
	}
}
