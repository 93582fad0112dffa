/* balance.c - automatic gate balancing (balance.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/balance.h"
#include "model/model.h"
#include "model/profile.h"

/* Timed repetitions per layer when profiling. */
#define AKK_BALANCE_REPS 5

double akk_balance_split(const double *cost, int n, int k, int *sizes)
{
	/* best[j][i]: the least largest sum splitting the first i costs into
	 * j parts. best[j][i] = min over t of max(best[j-1][t], S[i]-S[t]);
	 * the first term grows with t and the second shrinks, so the least
	 * maximum is where they cross, found by bisection; cut[j][i] keeps
	 * the largest such t (the last part as short as it can be). */
	double *S = malloc((size_t)(n + 1) * sizeof(double));
	double *best = malloc((size_t)(k + 1) * (n + 1) * sizeof(double));
	int *cut = malloc((size_t)(k + 1) * (n + 1) * sizeof(int));
	double res = -1;

	if (!S || !best || !cut || k < 1 || k > n)
		goto out;
#define B_(j, i) best[(size_t)(j) * (n + 1) + (i)]
#define C_(j, i) cut[(size_t)(j) * (n + 1) + (i)]
	S[0] = 0;
	for (int i = 0; i < n; i++)
		S[i + 1] = S[i] + cost[i];
	for (int i = 1; i <= n; i++)
		B_(1, i) = S[i], C_(1, i) = 0;
	for (int j = 2; j <= k; j++)
		for (int i = j; i <= n; i++) {
			/* t in [j-1, i-1]: find the first t where
			 * best[j-1][t] >= S[i]-S[t], then look at t-1 and t. */
			int lo = j - 1, hi = i - 1;
			while (lo < hi) {
				int mid = lo + (hi - lo) / 2;
				if (B_(j - 1, mid) >= S[i] - S[mid])
					hi = mid;
				else
					lo = mid + 1;
			}
			double bv = -1;
			int bt = lo;
			for (int t = lo + 1; t >= lo - 1; t--) {
				if (t < j - 1 || t > i - 1)
					continue;
				double a = B_(j - 1, t), b = S[i] - S[t];
				double v = a > b ? a : b;
				if (bv < 0 || v < bv)
					bv = v, bt = t;
			}
			B_(j, i) = bv;
			C_(j, i) = bt;
		}
	res = B_(k, n);
	for (int j = k, i = n; j >= 1; j--) {
		int t = C_(j, i);
		sizes[j - 1] = i - t;
		i = t;
	}
#undef B_
#undef C_
out:
	free(S);
	free(best);
	free(cut);
	return res;
}

int akk_spec_nlayers(const struct akk_spec *s)
{
	int n = 0;
	for (int i = 0; i < s->ngates; i++)
		n += s->gates[i].nlayers;
	return n;
}

int akk_balance_costs(const struct akk_spec *s, int profile, double *cost,
		      struct akk_err *e)
{
	struct akk_model m;
	struct akk_layer_cost *lc = NULL;
	int n = akk_spec_nlayers(s), rc = -1, off = 0;

	if (akk_model_plan(&m, s, e))
		return -1;
	if (!profile) {
		for (int gi = 0; gi < m.ngates; gi++)
			for (int i = 0; i < m.gates[gi].nlayers; i++)
				cost[off++] = akk_layer_train_flops(&m.gates[gi], gi, i,
								    s->sched.batch_size);
		rc = 0;
		goto out;
	}
	if (!(lc = calloc((size_t)n, sizeof(*lc)))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	if (akk_profile_model(&m, s->sched.batch_size, AKK_BALANCE_REPS, lc, e))
		goto out;
	for (int i = 0; i < n; i++)
		cost[i] = lc[i].fwd + lc[i].bwd + lc[i].opt;
	rc = 0;
out:
	free(lc);
	akk_model_release(&m);
	return rc;
}

int akk_balance(struct akk_spec *s, int profile, double *out_cost,
		struct akk_err *e)
{
	int n, k = s->auto_gates, *sizes = NULL, rc = -1;
	double *cost = NULL;

	if (!k || s->auto_split)
		return out_cost ? akk_balance_costs(s, profile, out_cost, e) : 0;
	n = akk_spec_nlayers(s);
	if (!(cost = malloc((size_t)n * sizeof(double))) ||
	    !(sizes = malloc((size_t)k * sizeof(int)))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	if (akk_balance_costs(s, profile, cost, e))
		goto out;
	if (akk_balance_split(cost, n, k, sizes) < 0) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	if (akk_balance_apply(s, sizes, e))
		goto out;
	if (out_cost)
		memcpy(out_cost, cost, (size_t)n * sizeof(double));
	rc = 0;
out:
	free(cost);
	free(sizes);
	return rc;
}

int akk_balance_apply(struct akk_spec *s, const int *sizes, struct akk_err *e)
{
	int k = s->auto_gates;
	size_t len, cap = 32 + 12 * (size_t)k;
	char *set = malloc(cap), **sets;

	if (!set)
		return akk_err_set(e, "out of memory");
	if (akk_spec_split(s, sizes, e)) {
		free(set);
		return -1;
	}
	len = (size_t)snprintf(set, cap, "network.gates.split=[");
	for (int i = 0; i < k; i++)
		len += (size_t)snprintf(set + len, cap - len, "%s%d",
					i ? ", " : "", sizes[i]);
	snprintf(set + len, cap - len, "]");
	if (!(sets = realloc(s->sets, (size_t)(s->nsets + 2) * sizeof(*sets)))) {
		free(set);
		return akk_err_set(e, "out of memory");
	}
	s->sets = sets;
	s->sets[s->nsets++] = set;
	s->sets[s->nsets] = NULL;
	return 0;
}
