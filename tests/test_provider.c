/* test_provider.c - the data provider's pool: what recycling reports. */
#include <string.h>

#include "testutil.h"
#include "base/workers.h"
#include "runtime/provider.h"
#include "config/spec.h"

/* A recycled batch goes back to the pool (0); once the provider is
 * stopped it cannot, and recycling says so (-1) instead of losing the
 * batch in silence. */
static void recycle_reports_a_stopped_provider(void **unused)
{
	struct akk_dataset d;
	struct akk_data_spec ds = { 0 };
	struct akk_preprocess pre;
	struct akk_provider p;
	struct akk_err e = { 0 };
	struct akk_batch *b;

	(void)unused;
	ds.scale = 1;
	tu_dataset(&d, 40, 4, 2, 7);
	assert_int_equal(akk_preprocess_init(&pre, &ds, d.in, 1, NULL, &e), 0);
	assert_int_equal(akk_provider_init(&p, &d, &pre, &(struct akk_provider_config){
			.ds = NULL, .shuffle = 1, .seed = 42, .bs = 8, .in = 16, .classes = 2,
			.npool = 2, .epoch = 0, .index = 0, .shards = 1, .shard = 0 }, &e), 0);
	assert_int_equal(akk_provider_start(&p, &e), 0);
	b = akk_provider_next(&p);
	assert_non_null(b);
	assert_int_equal(b->B, 8);
	assert_int_equal(akk_provider_recycle(&p, b), 0);
	b = akk_provider_next(&p);
	assert_non_null(b);
	akk_provider_stop(&p);
	assert_int_equal(akk_provider_recycle(&p, b), -1);
	assert_null(akk_provider_next(&p));
	akk_provider_release(&p);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
}

/* Stream n batches from p, recycling each; their first value each. */
static void stream(struct akk_provider *p, float *first, int n)
{
	for (int i = 0; i < n; i++) {
		struct akk_batch *b = akk_provider_next(p);
		assert_non_null(b);
		first[i] = b->x[0] + b->x[5] * 3 + (float)b->index * 7 + (float)b->epoch * 11;
		assert_int_equal(akk_provider_recycle(p, b), 0);
	}
}

/* The provider as an actor on the workers (a run's) streams exactly what
 * its thread does, epoch after epoch, and stops the same way. */
static void provider_on_workers_streams_the_same(void **unused)
{
	struct akk_dataset d;
	struct akk_data_spec ds = { 0 };
	struct akk_preprocess pre;
	struct akk_provider p, q;
	struct akk_workers w;
	struct akk_err e = { 0 };
	float a[15], b[15];

	(void)unused;
	ds.scale = 1;
	tu_dataset(&d, 40, 4, 2, 7);
	assert_int_equal(akk_preprocess_init(&pre, &ds, d.in, 1, NULL, &e), 0);
	assert_int_equal(akk_provider_init(&p, &d, &pre, &(struct akk_provider_config){
			.ds = NULL, .shuffle = 1, .seed = 42, .bs = 8, .in = 16, .classes = 2,
			.npool = 3, .epoch = 0, .index = 0, .shards = 1, .shard = 0 }, &e), 0);
	assert_int_equal(akk_provider_init(&q, &d, &pre, &(struct akk_provider_config){
			.ds = NULL, .shuffle = 1, .seed = 42, .bs = 8, .in = 16, .classes = 2,
			.npool = 3, .epoch = 0, .index = 0, .shards = 1, .shard = 0 }, &e), 0);
	assert_int_equal(akk_provider_start(&p, &e), 0);
	stream(&p, a, 15);	/* three epochs of five */
	akk_provider_stop(&p);
	assert_int_equal(akk_workers_init(&w, 2, &e), 0);
	assert_int_equal(akk_workers_start(&w, &e), 0);
	akk_provider_start_on(&q, &w);
	stream(&q, b, 15);
	assert_memory_equal(a, b, sizeof(a));
	struct akk_batch *x = akk_provider_next(&q);
	assert_non_null(x);
	akk_workers_stop(&w);
	akk_provider_stop(&q);
	assert_int_equal(akk_provider_recycle(&q, x), -1);
	assert_null(akk_provider_next(&q));
	assert_true(akk_workers_stats(&w, -1).runs >= 15);
	akk_workers_release(&w);
	akk_provider_release(&p);
	akk_provider_release(&q);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(recycle_reports_a_stopped_provider),
		cmocka_unit_test(provider_on_workers_streams_the_same),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
