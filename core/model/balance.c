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
	return akk_balance_split_all(cost, n, k, sizes, NULL);
}

double akk_balance_split_all(const double *cost, int n, int k, int *sizes,
			     double *by)
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
	for (int j = 1; by && j <= k; j++)
		by[j] = B_(j, n);
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
				cost[off++] = akk_layer_train_flops(&m.gates[gi], i,
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

/* Append the override KEY=[v0, v1, ...] to s->sets. */
static int record(struct akk_spec *s, const char *key, const int *v, int n,
		  struct akk_err *e)
{
	size_t len, cap = 48 + 12 * (size_t)n;
	char *set = malloc(cap), **sets;

	if (!set)
		return akk_err_set(e, "out of memory");
	len = (size_t)snprintf(set, cap, "%s=[", key);
	for (int i = 0; i < n; i++)
		len += (size_t)snprintf(set + len, cap - len, "%s%d", i ? ", " : "", v[i]);
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

int akk_balance_apply_unfold(struct akk_spec *s, const int *sizes, int nsizes,
			     const int *unfold, int nunfold, struct akk_err *e)
{
	if (akk_spec_unfold(s, sizes, nsizes, unfold, nunfold, e) ||
	    record(s, "network.gates.split", sizes, nsizes, e))
		return -1;
	return nunfold ? record(s, "network.gates.unfold", unfold, nunfold, e) : 0;
}

int akk_balance_apply(struct akk_spec *s, const int *sizes, struct akk_err *e)
{
	return akk_balance_apply_unfold(s, sizes, s->auto_gates, NULL, 0, e);
}
