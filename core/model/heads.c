/* heads.c - the losses of a network's several outputs, combined. */
#include "model/heads.h"

#include <stdio.h>
#include <string.h>

int akk_head_size(const struct akk_spec *s, int i, int outputs)
{
	return s->heads[i].size ? s->heads[i].size : outputs;
}

int akk_head_offset(const struct akk_spec *s, int i, int outputs)
{
	int off = 0;

	for (int j = 0; j < i; j++)
		off += akk_head_size(s, j, outputs);
	return off;
}

int akk_heads_plan(const struct akk_spec *s, int steps, int outputs,
		   struct akk_target_map *map, struct akk_err *e)
{
	const struct akk_mark *at = &s->heads_mark;
	long sum = 0;

	memset(map, 0, sizeof(*map));
	if (!s->nheads)
		return 0;
	if (steps != 1)
		return akk_err_at(e, s->path, at->line, at->col,
				  "network.outputs needs a flat output [N], but the network outputs %d steps of %d",
				  steps, outputs / steps);
	for (int i = 0; i < s->nheads; i++)
		sum += akk_head_size(s, i, outputs);
	if (sum != outputs)
		return akk_err_at(e, s->path, at->line, at->col,
				  "the outputs' sizes add up to %ld, but the network's last layer outputs %d",
				  sum, outputs);
	map->stride = outputs;
	map->ds = &s->data;
	for (int i = 0; i < s->nheads; i++) {
		if (s->heads[i].target == AKK_TARGET_LABELS)
			continue;
		map->slot[map->n].off = akk_head_offset(s, i, outputs);
		map->slot[map->n].size = akk_head_size(s, i, outputs);
		map->slot[map->n].from = s->heads[i].target == AKK_TARGET_INPUT ?
					 AKK_SLOT_INPUT : AKK_SLOT_Y;
		map->n++;
	}
	return 0;
}

int akk_heads_first(const struct akk_spec *s, int labels)
{
	for (int i = 0; i < s->nheads; i++)
		if ((s->heads[i].target == AKK_TARGET_LABELS) == !!labels)
			return i;
	return -1;
}

/* The regression sums of a slice, as akk_loss_slice adds them. */
static void add_sums(struct akk_reg_sums *r, const float *out, const float *t,
		     int ld, int B, int D)
{
	for (int b = 0; b < B; b++) {
		for (int j = 0; j < D; j++) {
			double z = out[(size_t)b * ld + j], y = t[(size_t)b * ld + j];
			r->sse += (z - y) * (z - y);
			r->sy += y;
			r->syy += y * y;
		}
		r->psnr += akk_psnr(out + (size_t)b * ld, t + (size_t)b * ld, (size_t)D, 1);
	}
	r->n += (long)B * D;
	r->samples += B;
}

double akk_heads_loss(const struct akk_spec *s, int outputs, float *dout,
		      const float *out, const int32_t *labels, const float *targets,
		      int B, long *correct, struct akk_reg_sums *rs,
		      struct akk_head_sums *hs)
{
	int fl = akk_heads_first(s, 1), ft = akk_heads_first(s, 0);
	double total = 0;

	for (int i = 0; i < s->nheads; i++) {
		const struct akk_head_spec *h = &s->heads[i];
		int off = akk_head_offset(s, i, outputs), D = akk_head_size(s, i, outputs);
		int lab = h->target == AKK_TARGET_LABELS;
		long hits = 0;
		struct akk_reg_sums reg = { 0 };
		/* the model's sums take the values in the order the plain
		 * loss adds them, the head's its own */
		struct akk_reg_sums *sums = i == ft && rs ? rs : hs ? &hs[i].reg : &reg;
		double l = akk_loss_slice(h->loss, h->huber_delta, h->weight,
					  dout ? dout + off : NULL, out + off,
					  lab ? labels : NULL, lab ? NULL : targets + off,
					  outputs, B, D, &hits, sums);

		total += h->weight * l;
		if (i == fl && correct)
			*correct += hits;
		if (!hs)
			continue;
		hs[i].loss += l * B;
		hs[i].samples += B;
		hs[i].correct += hits;
		if (sums == rs && !lab)
			add_sums(&hs[i].reg, out + off, targets + off, outputs, B, D);
	}
	return total;
}

enum akk_output_kind akk_head_output(const struct akk_spec *s, int i)
{
	if (s->heads[i].target != AKK_TARGET_LABELS)
		return AKK_OUTPUT_VALUES;
	return akk_loss_output(s->heads[i].loss, 0);
}

int akk_heads_width(const struct akk_spec *s, int outputs, int target, int n)
{
	if (!s->nheads)
		return outputs;
	for (int i = 0; i < s->nheads; i++) {
		int size = akk_head_size(s, i, outputs);
		if (s->heads[i].target == target &&
		    (target == AKK_TARGET_LABELS ? size < n : size != n))
			return size;
	}
	return n;
}

void akk_heads_columns(const struct akk_spec *s, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < s->nheads && n < size; i++) {
		int w = snprintf(buf + n, size - n, ",%s_loss,%s_%s", s->heads[i].name,
				 s->heads[i].name,
				 s->heads[i].target == AKK_TARGET_LABELS ? "acc" : "rmse");
		n += w > 0 ? (size_t)w : 0;
	}
}

void akk_heads_values(const struct akk_spec *s, const struct akk_head_sums *hs,
		      double *v)
{
	for (int i = 0; i < s->nheads; i++) {
		long n = hs[i].samples;

		v[2 * i] = n ? hs[i].loss / (double)n : 0;
		v[2 * i + 1] = s->heads[i].target == AKK_TARGET_LABELS ?
			       (n ? (double)hs[i].correct / (double)n : 0) :
			       akk_reg_rmse(&hs[i].reg);
	}
}

void akk_heads_output_row(const struct akk_spec *s, float *p, const float *z,
			  int outputs)
{
	for (int i = 0; i < s->nheads; i++) {
		int off = akk_head_offset(s, i, outputs);

		akk_output_row(akk_head_output(s, i), p + off, z + off,
			       akk_head_size(s, i, outputs));
	}
}
