/* test_float_mode.c - flush-to-zero and denormals-are-zero on the threads
 * that compute (akk_float_mode, tensor/tensor.h): a provider's batches
 * come out of its actor with denormals flushed, on workers that were not
 * set to flush them. */
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "data/preprocess.h"
#include "runtime/provider.h"
#include "config/spec.h"

/* Float pixels of 1e-40 (a denormal), scale 1, no normalisation: the
 * provider's x * 1 + 0 is 0 under DAZ/FTZ, 1e-40 without. This thread
 * (the test's, worker 0) and the other worker start in the default mode
 * (no on_start), so only the provider's own setting can flush them. */
static void provider_flushes_denormals(void **unused)
{
	struct akk_dataset d;
	struct akk_data_spec ds = { 0 };
	struct akk_provider p;
	struct akk_workers w;
	struct akk_err e = { 0 };
	struct akk_preprocess pre = { 0 };
	struct akk_batch *b;
	volatile float tiny = 1e-40f;

	(void)unused;
	assert_true(tiny > 0 && tiny < 1.17549435e-38f);	/* no DAZ here */
	ds.scale = 1;
	tu_dataset(&d, 40, 4, 2, 7);
	free(d.x8);
	d.x8 = NULL;
	d.xtype = AKK_X_F32;
	d.xf = malloc(d.n * d.in * sizeof(*d.xf));
	assert_non_null(d.xf);
	for (size_t i = 0; i < d.n * d.in; i++)
		d.xf[i] = tiny;
	assert_int_equal(akk_preprocess_init(&pre, &ds, d.in, 1, NULL, &e), 0);
	assert_int_equal(akk_provider_init(&p, &d, &pre, &(struct akk_provider_config){
			.ds = &ds, .shuffle = 1, .seed = 42, .bs = 8, .in = 16, .classes = 2,
			.npool = 2, .epoch = 0, .index = 0, .shards = 1, .shard = 0 }, &e), 0);
	tu_workers_start(&w, 2);
	akk_provider_start(&p, &w);
	b = akk_provider_next(&p);
	assert_non_null(b);
	for (int i = 0; i < b->B * 16; i++)
		assert_true(b->x[i] == 0);
	assert_int_equal(akk_provider_recycle(&p, b), 0);
	akk_workers_stop(&w);
	akk_provider_release(&p);
	akk_workers_release(&w);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(provider_flushes_denormals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
