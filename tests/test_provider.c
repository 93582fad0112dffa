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
	struct akk_workers w;
	struct akk_err e = { 0 };
	struct akk_batch *b;

	(void)unused;
	ds.scale = 1;
	tu_dataset(&d, 40, 4, 2, 7);
	assert_int_equal(akk_preprocess_init(&pre, &ds, d.in, 1, NULL, &e), 0);
	assert_int_equal(akk_provider_init(&p, &d, &pre, &(struct akk_provider_config){
			.ds = NULL, .shuffle = 1, .seed = 42, .bs = 8, .in = 16, .classes = 2,
			.npool = 2, .epoch = 0, .index = 0, .shards = 1, .shard = 0 }, &e), 0);
	tu_workers_start(&w, 2);
	akk_provider_start(&p, &w);
	b = akk_provider_next(&p);
	assert_non_null(b);
	assert_int_equal(b->B, 8);
	assert_int_equal(akk_provider_recycle(&p, b), 0);
	b = akk_provider_next(&p);
	assert_non_null(b);
	akk_workers_stop(&w);
	akk_provider_stop(&p);
	assert_int_equal(akk_provider_recycle(&p, b), -1);
	assert_null(akk_provider_next(&p));
	akk_provider_release(&p);
	akk_workers_release(&w);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
}

/* The provider as an actor on the workers streams exactly the batches of
 * the seeded orders, epoch after epoch (each batch i of epoch k the
 * samples at [8 i, 8 i + 8) of akk_shuffle's order for k), with every
 * fill a message run on the workers. */
static void provider_streams_the_seeded_order(void **unused)
{
	struct akk_dataset d;
	struct akk_data_spec ds = { 0 };
	struct akk_preprocess pre;
	struct akk_provider q;
	struct akk_batch ref;
	struct akk_workers w;
	struct akk_err e = { 0 };
	uint32_t perm[40];

	(void)unused;
	ds.scale = 1;
	tu_dataset(&d, 40, 4, 2, 7);
	assert_int_equal(akk_preprocess_init(&pre, &ds, d.in, 1, NULL, &e), 0);
	assert_int_equal(akk_batch_alloc(&ref, 8, 16, 2, 1), 0);
	assert_int_equal(akk_provider_init(&q, &d, &pre, &(struct akk_provider_config){
			.ds = NULL, .shuffle = 1, .seed = 42, .bs = 8, .in = 16, .classes = 2,
			.npool = 3, .epoch = 0, .index = 0, .shards = 1, .shard = 0 }, &e), 0);
	tu_workers_start(&w, 2);
	akk_provider_start(&q, &w);
	for (int i = 0; i < 15; i++) {	/* three epochs of five */
		struct akk_batch *b = akk_provider_next(&q);
		int epoch = i / 5, index = i % 5;

		assert_non_null(b);
		akk_shuffle(perm, 40, 42, epoch);
		akk_batch_fill_range(&ref, &d, perm, (size_t)index * 8, 8, index == 4, &pre);
		assert_int_equal(b->epoch, epoch);
		assert_int_equal(b->index, index);
		assert_int_equal(b->B, 8);
		assert_memory_equal(b->x, ref.x, 8 * 16 * sizeof(float));
		assert_memory_equal(b->labels, ref.labels, 8 * sizeof(*ref.labels));
		assert_int_equal(akk_provider_recycle(&q, b), 0);
	}
	struct akk_batch *x = akk_provider_next(&q);
	assert_non_null(x);
	akk_workers_stop(&w);
	akk_provider_stop(&q);
	assert_int_equal(akk_provider_recycle(&q, x), -1);
	assert_null(akk_provider_next(&q));
	assert_true(akk_workers_stats(&w, -1).runs >= 15);
	akk_provider_release(&q);
	akk_workers_release(&w);
	akk_batch_release(&ref);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(recycle_reports_a_stopped_provider),
		cmocka_unit_test(provider_streams_the_seeded_order),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
