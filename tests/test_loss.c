/* test_loss.c - losses and their gradients.
 *
 * tests/ref/loss.txt holds torch's values (F.cross_entropy,
 * binary_cross_entropy_with_logits, mse_loss, l1_loss, huber_loss, computed
 * in float64 on float32 logits, one-hot targets) written by
 * tests/ref/gen_optim.py. The mean loss must match to LOSS_TOL relative
 * (both sides are double sums of the same float inputs), dlogits to
 * GRAD_TOL relative with an absolute floor of GRAD_TOL * GRAD_FLOOR (dlogits
 * are floats, so about one ulp). Every gradient is also checked against a
 * central finite difference (see test_finite_difference for its tolerance).
 * Then: partial batches, the correct count, and huge logits. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nn/loss.h"
#include "testutil.h"

#define LOSS_TOL 1e-9
#define GRAD_TOL 1e-5
#define GRAD_FLOOR 1e-3
#define MAXE 64		/* elements per fixture case */

static const enum akk_loss_kind kinds[] = {
	AKK_LOSS_SOFTMAX_CE, AKK_LOSS_SIGMOID_CE, AKK_LOSS_MSE, AKK_LOSS_MAE,
	AKK_LOSS_HUBER,
};
#define NKINDS (sizeof kinds / sizeof *kinds)

static void test_torch_fixtures(void **ctx)
{
	FILE *f = fopen("tests/ref/loss.txt", "r");
	char word[64], kind[64];
	int ncases = 0, c;
	double worst_loss = 0, worst_grad = 0;

	(void)ctx;
	if (!f)
		fail_msg("cannot open 'tests/ref/loss.txt' (run the tests from "
			 "the top directory)");
	while ((c = fgetc(f)) == '#')
		while ((c = fgetc(f)) != '\n' && c != EOF)
			;
	ungetc(c, f);
	while (fscanf(f, "%63s", word) == 1 && strcmp(word, "end")) {
		float delta, z[MAXE], d[MAXE], dref[MAXE];
		int32_t lab[MAXE];
		int B, D;
		double want, got, e;
		long correct = 3, want_correct;	/* akk_loss adds to it */

		assert_string_equal(word, "case");
		assert_int_equal(fscanf(f, "%63s delta %f B %d D %d", kind,
					&delta, &B, &D), 4);
		assert_true(akk_loss_find(kind) >= 0 && B * D <= MAXE);
		tu_expect_word(f, "logits");
		for (int i = 0; i < B * D; i++)
			assert_int_equal(fscanf(f, "%f", &z[i]), 1);
		tu_expect_word(f, "labels");
		for (int b = 0; b < B; b++) {
			int v;
			assert_int_equal(fscanf(f, "%d", &v), 1);
			lab[b] = (int32_t)v;
		}
		tu_expect_word(f, "loss");
		assert_int_equal(fscanf(f, "%lf", &want), 1);
		tu_expect_word(f, "dlogits");
		for (int i = 0; i < B * D; i++) {
			double v;
			assert_int_equal(fscanf(f, "%lf", &v), 1);
			dref[i] = (float)v;
		}
		tu_expect_word(f, "correct");
		assert_int_equal(fscanf(f, "%ld", &want_correct), 1);

		got = akk_loss(akk_loss_find(kind), delta, d, z, lab, B, D,
			       &correct);
		e = fabs(got - want) / fmax(fabs(want), 1e-12);
		if (e > worst_loss)
			worst_loss = e;
		if (e > LOSS_TOL)
			fail_msg("%s (B %d D %d): loss %.17g, torch %.17g", kind,
				 B, D, got, want);
		e = tu_max_rel_err(d, dref, B * D, GRAD_FLOOR);
		if (e > worst_grad)
			worst_grad = e;
		if (e > GRAD_TOL)
			fail_msg("%s (B %d D %d): dlogits differ from torch by "
				 "%.3g relative", kind, B, D, e);
		assert_int_equal(correct, 3 + want_correct);
		/* dlogits NULL: same loss, nothing written */
		assert_true(akk_loss(akk_loss_find(kind), delta, NULL, z, lab,
				     B, D, NULL) == got);
		ncases++;
	}
	assert_string_equal(word, "end");
	assert_true(ncases >= 10);
	fclose(f);
	if (getenv("AKK_TEST_VERBOSE"))
		fprintf(stderr, "  %d torch cases: max rel err loss %.3g, "
			"dlogits %.3g\n", ncases, worst_loss, worst_grad);
}

/* Move logits at least 0.05 away from the kinks of MAE (y = t) and Huber
 * (|y - t| = delta), where the finite difference would straddle a kink. */
static void avoid_kinks(float *z, const int32_t *lab, int B, int D,
			float delta)
{
	for (int b = 0; b < B; b++)
		for (int j = 0; j < D; j++) {
			float *x = &z[b * D + j], t = j == lab[b];
			float kinks[3] = { t, t - delta, t + delta };

			for (int k = 0; k < 3; k++)
				if (fabsf(*x - kinks[k]) < 0.05f)
					*x = kinks[k] + 0.1f;
		}
}

/* Central differences (L(z + h) - L(z - h)) / (2h) per logit, with h the
 * float-representable step actually taken. L is a double sum of exact
 * float inputs, so rounding in the difference is ~1e-13 and the error is
 * the O(h^2) truncation (zero for MSE, MAE and Huber away from kinks,
 * below 1e-7 for the cross-entropies at h = 1e-3) plus the float rounding
 * of dlogits: |fd - dlogits| <= FD_ABS + FD_REL |dlogits|. */
#define FD_H 1e-3f
#define FD_ABS 1e-7
#define FD_REL 1e-5

static void test_finite_difference(void **ctx)
{
	enum { B = 3, D = 4 };
	static const float deltas[] = { 1.0f, 0.3f };

	(void)ctx;
	for (size_t k = 0; k < NKINDS; k++)
		for (int di = 0; di < 2; di++) {
			float z[B * D], d[B * D], delta = deltas[di];
			int32_t lab[B] = { 2, 0, 3 };
			double worst = 0;

			tu_fill(z, B * D, -2, 2, 11 + (uint32_t)k);
			avoid_kinks(z, lab, B, D, delta);
			akk_loss(kinds[k], delta, d, z, lab, B, D, NULL);
			for (int i = 0; i < B * D; i++) {
				float z0 = z[i], zp = z0 + FD_H, zm = z0 - FD_H;
				double lp, lm, fd, err;

				z[i] = zp;
				lp = akk_loss(kinds[k], delta, NULL, z, lab, B,
					      D, NULL);
				z[i] = zm;
				lm = akk_loss(kinds[k], delta, NULL, z, lab, B,
					      D, NULL);
				z[i] = z0;
				fd = (lp - lm) / ((double)zp - zm);
				err = fabs(fd - d[i]);
				if (err > worst)
					worst = err;
				if (err > FD_ABS + FD_REL * fabs(d[i]))
					fail_msg("%s (delta %g) logit %d: "
						 "dlogits %.9g, finite "
						 "difference %.9g",
						 akk_loss_name(kinds[k]), delta,
						 i, d[i], fd);
			}
			if (getenv("AKK_TEST_VERBOSE"))
				fprintf(stderr, "  fd %s delta %g: max abs err "
					"%.3g\n", akk_loss_name(kinds[k]),
					delta, worst);
		}
}

/* A batch's loss is the mean of its samples' losses and its gradient is
 * 1/B of theirs, whatever B is, so batches weighted by B average exactly
 * over an epoch with a partial last batch. */
static void test_partial_batch(void **ctx)
{
	enum { B = 5, D = 4 };

	(void)ctx;
	for (size_t k = 0; k < NKINDS; k++) {
		float z[B * D], d[B * D], d1[D], d4[4 * D];
		int32_t lab[B] = { 1, 3, 0, 0, 2 };
		double whole, sum = 0, l4, l1;

		tu_fill(z, B * D, -3, 3, 5);
		whole = akk_loss(kinds[k], 0.7f, d, z, lab, B, D, NULL);
		for (int b = 0; b < B; b++) {
			sum += akk_loss(kinds[k], 0.7f, d1, z + b * D, lab + b,
					1, D, NULL);
			for (int j = 0; j < D; j++)
				assert_float_equal(d[b * D + j], d1[j] / B,
						   1e-7 * fabsf(d1[j]) + 1e-12);
		}
		assert_float_equal(whole, sum / B, 1e-12 * fabs(whole));
		/* a batch of 4, then a partial batch of 1 */
		l4 = akk_loss(kinds[k], 0.7f, d4, z, lab, 4, D, NULL);
		l1 = akk_loss(kinds[k], 0.7f, d1, z + 4 * D, lab + 4, 1, D,
			      NULL);
		assert_float_equal((4 * l4 + 1 * l1) / 5, whole,
				   1e-12 * fabs(whole));
	}
}

static void test_correct_count(void **ctx)
{
	/* argmax per row: 2, 0, 1, 0 (ties go to the first) */
	const float z[4 * 3] = {
		0, 1, 5,  9, -1, 2,  -3, -2, -2.5f,  1, 1, 0,
	};
	const int32_t lab[4] = { 2, 1, 1, 0 };

	(void)ctx;
	for (size_t k = 0; k < NKINDS; k++) {
		long n = 10;

		akk_loss(kinds[k], 1, NULL, z, lab, 4, 3, &n);
		assert_int_equal(n, 13);
		akk_loss(kinds[k], 1, NULL, z, lab, 1, 3, &n);
		assert_int_equal(n, 14);
	}
}

/* Logits of +-1e4 (and 3e4) must not overflow: finite loss and gradient,
 * softmax CE ~0 when the label is the clear argmax, and ~the logit gap
 * when it is not. */
static void test_huge_logits(void **ctx)
{
	enum { B = 4, D = 5 };
	float z[B * D], d[B * D];
	int32_t lab[B] = { 0, 4, 2, 1 };

	(void)ctx;
	tu_fill(z, B * D, -1e4f, 1e4f, 3);
	z[3] = 3e4f;
	for (size_t k = 0; k < NKINDS; k++) {
		double l = akk_loss(kinds[k], 1, d, z, lab, B, D, NULL);

		assert_true(isfinite(l));
		for (int i = 0; i < B * D; i++)
			assert_true(isfinite(d[i]));
	}
	{
		const float y[2 * 3] = { 1e4f, -1e4f, 0, 0, 2e4f, -2e4f };
		const int32_t lt[2] = { 0, 1 }, lf[2] = { 1, 0 };

		assert_true(akk_loss(AKK_LOSS_SOFTMAX_CE, 1, d, y, lt, 2, 3,
				     NULL) < 1e-300);
		assert_float_equal(akk_loss(AKK_LOSS_SOFTMAX_CE, 1, d, y, lf,
					    2, 3, NULL), (2e4 + 2e4) / 2, 1e-9);
		/* gradient rows: onehot(argmax) - onehot(label), over B */
		assert_float_equal(d[0], 0.5f, 0);
		assert_float_equal(d[1], -0.5f, 0);
		assert_float_equal(d[4], 0.5f, 0);
		assert_float_equal(d[3], -0.5f, 0);
		assert_true(akk_loss(AKK_LOSS_SIGMOID_CE, 1, d, y, lt, 2, 3,
				     NULL) > 0);
	}
}

static void test_softmax_row(void **ctx)
{
	float z[6], p[6];
	double s = 0, zs = 0;

	(void)ctx;
	tu_fill(z, 6, -4, 4, 9);
	akk_softmax_row(p, z, 6);
	for (int j = 0; j < 6; j++)
		zs += exp(z[j]);
	for (int j = 0; j < 6; j++) {
		assert_float_equal(p[j], exp(z[j]) / zs, 1e-7);
		s += p[j];
	}
	assert_float_equal(s, 1, 1e-6);
	z[0] = 1e4f;
	z[1] = -1e4f;
	akk_softmax_row(p, z, 6);
	assert_float_equal(p[0], 1, 0);
	assert_float_equal(p[1], 0, 0);
}

static void test_names(void **ctx)
{
	(void)ctx;
	for (int k = 0; akk_loss_names[k]; k++)
		assert_int_equal(akk_loss_find(akk_loss_name(k)), k);
	assert_int_equal(akk_loss_find("hinge"), -1);
	assert_null(akk_loss_name(AKK_LOSS_HUBER + 1));
	assert_string_equal(akk_loss_name(AKK_LOSS_SOFTMAX_CE),
			    "softmax_cross_entropy");
}

/* Regression targets: mse, mae and huber against float
 * targets, their gradients by central differences as above, the value
 * against a direct sum, and the RMSE and R^2 sums. */
static void test_targets(void **ctx)
{
	enum { B = 3, D = 2 };
	static const enum akk_loss_kind reg[] = { AKK_LOSS_MSE, AKK_LOSS_MAE,
						  AKK_LOSS_HUBER };

	(void)ctx;
	for (size_t k = 0; k < 3; k++)
		for (int di = 0; di < 2; di++) {
			float z[B * D], t[B * D], d[B * D], delta = di ? 0.3f : 1.0f;
			double direct = 0, got;

			tu_fill(z, B * D, -2, 2, 21 + (uint32_t)k);
			tu_fill(t, B * D, -3, 3, 31 + (uint32_t)k);
			/* away from the kinks at r = 0 and |r| = delta */
			for (int i = 0; i < B * D; i++) {
				double r = (double)z[i] - t[i];
				if (fabs(r) < 0.05 || fabs(fabs(r) - delta) < 0.05)
					z[i] += 0.2f;
			}
			for (int i = 0; i < B * D; i++) {
				double r = (double)z[i] - t[i], a = fabs(r);
				direct += reg[k] == AKK_LOSS_MSE ? r * r :
					  reg[k] == AKK_LOSS_MAE ? a :
					  a <= delta ? 0.5 * r * r : delta * (a - 0.5 * delta);
			}
			got = akk_loss_targets(reg[k], delta, d, z, t, B, D, NULL);
			assert_true(fabs(got - direct / (B * D)) < 1e-12);
			for (int i = 0; i < B * D; i++) {
				float z0 = z[i], zp = z0 + FD_H, zm = z0 - FD_H;
				double lp, lm, fd;

				z[i] = zp;
				lp = akk_loss_targets(reg[k], delta, NULL, z, t, B, D, NULL);
				z[i] = zm;
				lm = akk_loss_targets(reg[k], delta, NULL, z, t, B, D, NULL);
				z[i] = z0;
				fd = (lp - lm) / ((double)zp - zm);
				if (fabs(fd - d[i]) > FD_ABS + FD_REL * fabs(d[i]))
					fail_msg("%s (delta %g) output %d: dout %.9g, "
						 "finite difference %.9g",
						 akk_loss_name(reg[k]), delta, i, d[i], fd);
			}
		}
	/* targets 1, 2, 3, 4 predicted 1, 2, 3, 5: sse 1, sst 5 */
	{
		const float out[4] = { 1, 2, 3, 5 }, tg[4] = { 1, 2, 3, 4 };
		struct akk_reg_sums s = { 0 };

		akk_loss_targets(AKK_LOSS_MSE, 1, NULL, out, tg, 4, 1, &s);
		assert_int_equal(s.n, 4);
		assert_true(fabs(akk_reg_rmse(&s) - 0.5) < 1e-12);
		assert_true(fabs(akk_reg_r2(&s) - 0.8) < 1e-12);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_torch_fixtures),
		cmocka_unit_test(test_finite_difference),
		cmocka_unit_test(test_partial_batch),
		cmocka_unit_test(test_correct_count),
		cmocka_unit_test(test_huge_logits),
		cmocka_unit_test(test_softmax_row),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_targets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
