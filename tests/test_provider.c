/* test_provider.c - the data provider's pool: what recycling reports. */
#include <string.h>

#include "testutil.h"
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
	assert_int_equal(akk_provider_init(&p, &d, &pre, 1, 42, 8, 16, 2, 2, 0, 0, 1, 0, &e), 0);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(recycle_reports_a_stopped_provider),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
