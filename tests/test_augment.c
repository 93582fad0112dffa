/* test_augment.c - training-batch augmentation: each op on a tiny image,
 * identity when off, the same stream for the same (seed, epoch, sample)
 * whatever the batching, no allocation per batch, and the provider
 * augmenting training batches only.
 *
 * Like test_alloc.c, the program counts malloc calls through forwarders to
 * glibc's __libc_* entry points; under ASan or TSan (which replace malloc)
 * the count is not asserted. */
#include <malloc.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"
#include "config/spec.h"
#include "data/augment.h"
#include "runtime/provider.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

static atomic_long g_allocs;

#ifndef SANITIZED
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
void *malloc(size_t n)
{
	atomic_fetch_add(&g_allocs, 1);
	return __libc_malloc(n);
}
void *calloc(size_t a, size_t b)
{
	atomic_fetch_add(&g_allocs, 1);
	return __libc_calloc(a, b);
}
void *realloc(void *p, size_t n)
{
	atomic_fetch_add(&g_allocs, 1);
	return __libc_realloc(p, n);
}
#endif

static struct akk_data_spec spec(int crop, int flip, int translate)
{
	struct akk_data_spec s;

	memset(&s, 0, sizeof(s));
	s.scale = 1;
	s.augment = 1;
	s.crop_padding = crop;
	s.flip = flip;
	s.translate = translate;
	return s;
}

/* A 2-channel 3 x 4 image: channel c, pixel (y, x) = 100c + 10y + x + 1. */
static void image(float *x)
{
	for (int c = 0; c < 2; c++)
		for (int y = 0; y < 3; y++)
			for (int i = 0; i < 4; i++)
				x[c * 12 + y * 4 + i] = (float)(100 * c + 10 * y + i + 1);
}

/* The first sample index (>= from) whose draw makes x differ from the
 * image, and that x. */
static size_t first_changed(struct akk_augment *a, float *x, size_t from)
{
	float orig[24];

	image(orig);
	for (size_t i = from; i < from + 1000; i++) {
		image(x);
		akk_augment_sample(a, x, 0, i);
		if (memcmp(x, orig, sizeof(orig)))
			return i;
	}
	fail_msg("no sample changed");
	return 0;
}

static void test_off_is_identity(void **state)
{
	struct akk_data_spec s = spec(0, 0, 0);
	struct akk_augment a;
	struct akk_err e;
	float x[24], orig[24];

	(void)state;
	assert_int_equal(akk_augment_init(&a, &s, 2, 3, 4, 1, &e), 0);
	assert_int_equal(a.on, 0);
	assert_null(a.tmp);
	image(x);
	image(orig);
	akk_augment_batch(&a, x, 1, NULL, 0, 3);
	assert_memory_equal(x, orig, sizeof(x));
	akk_augment_release(&a);
	/* keys given but augment: absent */
	s = spec(4, 1, 2);
	s.augment = 0;
	assert_int_equal(akk_augment_init(&a, &s, 2, 3, 4, 1, &e), 0);
	assert_int_equal(a.on, 0);
}

/* flip alone: every changed sample is the exact mirror image. */
static void test_flip(void **state)
{
	struct akk_data_spec s = spec(0, 1, 0);
	struct akk_augment a;
	struct akk_err e;
	float x[24];
	int flipped = 0;

	(void)state;
	assert_int_equal(akk_augment_init(&a, &s, 2, 3, 4, 9, &e), 0);
	for (size_t i = 0; i < 64; i++) {
		float orig[24];
		image(x);
		image(orig);
		akk_augment_sample(&a, x, 1, i);
		if (!memcmp(x, orig, sizeof(x)))
			continue;
		flipped++;
		for (int c = 0; c < 2; c++)
			for (int y = 0; y < 3; y++)
				for (int k = 0; k < 4; k++)
					assert_true(x[c * 12 + y * 4 + k] ==
						    (float)(100 * c + 10 * y + (3 - k) + 1));
	}
	/* about half of 64 */
	assert_in_range(flipped, 16, 48);
	akk_augment_release(&a);
}

/* crop_padding alone: a shift with zeros coming in, by at most P. */
static void test_crop(void **state)
{
	struct akk_data_spec s = spec(1, 0, 0);
	struct akk_augment a;
	struct akk_err e;
	float x[24];
	int seen_zero = 0;

	(void)state;
	assert_int_equal(akk_augment_init(&a, &s, 2, 3, 4, 5, &e), 0);
	for (size_t from = 0; from < 40; from++) {
		from = first_changed(&a, x, from);
		/* find the shift (dy, dx) that explains pixel values */
		int ok = 0;
		for (int dy = -1; dy <= 1 && !ok; dy++)
			for (int dx = -1; dx <= 1 && !ok; dx++) {
				int match = 1;
				for (int c = 0; c < 2; c++)
					for (int y = 0; y < 3; y++)
						for (int k = 0; k < 4; k++) {
							int sy = y + dy, sx = k + dx;
							float want = sy < 0 || sy > 2 || sx < 0 || sx > 3 ? 0.0f :
								(float)(100 * c + 10 * sy + sx + 1);
							if (x[c * 12 + y * 4 + k] != want)
								match = 0;
						}
				ok = match;
			}
		assert_true(ok);
		for (int k = 0; k < 24; k++)
			seen_zero |= x[k] == 0.0f;
	}
	assert_true(seen_zero);
	akk_augment_release(&a);
}

/* translate alone: a shift with the border repeated: never a zero. */
static void test_translate(void **state)
{
	struct akk_data_spec s = spec(0, 0, 1);
	struct akk_augment a;
	struct akk_err e;
	float x[24];

	(void)state;
	assert_int_equal(akk_augment_init(&a, &s, 2, 3, 4, 5, &e), 0);
	for (size_t from = 0; from < 40; from++) {
		from = first_changed(&a, x, from);
		int ok = 0;
		for (int ty = -1; ty <= 1 && !ok; ty++)
			for (int tx = -1; tx <= 1 && !ok; tx++) {
				int match = 1;
				for (int c = 0; c < 2; c++)
					for (int y = 0; y < 3; y++)
						for (int k = 0; k < 4; k++) {
							int sy = y + ty, sx = k + tx;
							sy = sy < 0 ? 0 : sy > 2 ? 2 : sy;
							sx = sx < 0 ? 0 : sx > 3 ? 3 : sx;
							if (x[c * 12 + y * 4 + k] !=
							    (float)(100 * c + 10 * sy + sx + 1))
								match = 0;
						}
				ok = match;
			}
		assert_true(ok);
	}
	akk_augment_release(&a);
}

/* The same (seed, epoch, index) gives the same sample whatever the batch
 * it is in; another epoch or seed gives another. */
static void test_deterministic(void **state)
{
	struct akk_data_spec s = spec(2, 1, 1);
	struct akk_augment a, b;
	struct akk_err e;
	float x[4 * 24], y[24];
	uint32_t perm[4] = { 7, 2, 9, 4 };
	int differ = 0;

	(void)state;
	assert_int_equal(akk_augment_init(&a, &s, 2, 3, 4, 11, &e), 0);
	assert_int_equal(akk_augment_init(&b, &s, 2, 3, 4, 11, &e), 0);
	for (int j = 0; j < 4; j++)
		image(x + j * 24);
	akk_augment_batch(&a, x, 4, perm, 0, 2);
	for (int j = 0; j < 4; j++) {
		image(y);
		akk_augment_sample(&b, y, 2, perm[j]);
		assert_memory_equal(x + j * 24, y, sizeof(y));
	}
	for (int j = 0; j < 16; j++) {
		float z[24];
		image(y);
		image(z);
		akk_augment_sample(&b, y, 2, (size_t)j);
		akk_augment_sample(&b, z, 3, (size_t)j);
		differ += memcmp(y, z, sizeof(y)) != 0;
	}
	assert_true(differ > 0);
	akk_augment_release(&a);
	akk_augment_release(&b);
}

/* Augmenting allocates nothing. */
static void test_no_alloc(void **state)
{
	struct akk_data_spec s = spec(4, 1, 2);
	struct akk_augment a;
	struct akk_err e;
	float *x;
	long before;

	(void)state;
#ifdef SANITIZED
	skip();
#endif
	x = malloc(8 * 3 * 32 * 32 * sizeof(float));
	assert_non_null(x);
	tu_fill(x, 8 * 3 * 32 * 32, 0, 1, 3);
	assert_int_equal(akk_augment_init(&a, &s, 3, 32, 32, 1, &e), 0);
	before = atomic_load(&g_allocs);
	for (int epoch = 0; epoch < 20; epoch++)
		akk_augment_batch(&a, x, 8, NULL, 8 * (size_t)epoch, epoch);
	assert_int_equal(atomic_load(&g_allocs), before);
	akk_augment_release(&a);
	free(x);
}

/* The provider augments training batches (shuffle) and never validation
 * ones. */
static void test_provider_train_only(void **state)
{
	struct akk_dataset d;
	struct akk_data_spec s = spec(2, 1, 0);
	struct akk_provider p, q;
	struct akk_workers w;
	struct akk_preprocess pre;
	struct akk_err e;
	struct akk_batch *b;
	size_t in;

	(void)state;
	tu_dataset(&d, 16, 6, 2, 3);
	in = d.in;
	assert_int_equal(akk_preprocess_init(&pre, &s, in, 1, NULL, &e), 0);
	/* validation: file order, the plain pixels */
	assert_int_equal(akk_provider_init(&q, &d, &pre, &(struct akk_provider_config){
			.ds = &s, .shuffle = 0, .seed = 42, .bs = 4, .in = in, .classes = 2,
			.npool = 2, .epoch = 0, .index = 0, .shards = 1, .shard = 0 }, &e), 0);
	assert_null(q.aug.tmp);
	tu_workers_start(&w, 2);
	akk_provider_start(&q, &w);
	b = akk_provider_next(&q);
	for (int j = 0; j < 4; j++)
		for (size_t k = 0; k < in; k++)
			assert_true(b->x[j * in + k] == (float)d.x8[j * in + k]);
	akk_provider_recycle(&q, b);
	/* training: some batch of the first epoch differs from its pixels */
	assert_int_equal(akk_provider_init(&p, &d, &pre, &(struct akk_provider_config){
			.ds = &s, .shuffle = 1, .seed = 42, .bs = 4, .in = in, .classes = 2,
			.npool = 2, .epoch = 0, .index = 0, .shards = 1, .shard = 0 }, &e), 0);
	assert_non_null(p.aug.tmp);
	akk_provider_start(&p, &w);
	{
		struct akk_augment ref;
		int changed = 0;
		uint32_t perm[16];

		assert_int_equal(akk_augment_init(&ref, &s, d.c, d.h, d.w, 42, &e), 0);
		akk_shuffle(perm, 16, 42, 0);
		for (int i = 0; i < 4; i++) {
			b = akk_provider_next(&p);
			for (int j = 0; j < 4; j++) {
				size_t sidx = perm[i * 4 + j];
				float want[36];
				for (size_t k = 0; k < in; k++)
					want[k] = (float)d.x8[sidx * in + k];
				changed |= memcmp(b->x + j * in, want, in * sizeof(float)) != 0;
				/* exactly the sample's own draw */
				akk_augment_sample(&ref, want, 0, sidx);
				assert_memory_equal(b->x + j * in, want, in * sizeof(float));
			}
			akk_provider_recycle(&p, b);
		}
		assert_true(changed);
		akk_augment_release(&ref);
	}
	akk_workers_stop(&w);
	akk_provider_release(&q);
	akk_provider_release(&p);
	akk_workers_release(&w);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
}

/* A provider started mid-run (resume at epoch 1, batch 2) streams the
 * same augmented batches as one that ran from the start. */
static void test_resume_same_stream(void **state)
{
	struct akk_dataset d;
	struct akk_data_spec s = spec(2, 1, 1);
	struct akk_provider p, q;
	struct akk_workers w;
	struct akk_preprocess pre;
	struct akk_err e;
	struct akk_batch *b, *c;
	size_t in;

	(void)state;
	tu_dataset(&d, 20, 6, 2, 5);
	in = d.in;
	assert_int_equal(akk_preprocess_init(&pre, &s, in, 1, NULL, &e), 0);
	assert_int_equal(akk_provider_init(&p, &d, &pre, &(struct akk_provider_config){
			.ds = &s, .shuffle = 1, .seed = 7, .bs = 4, .in = in, .classes = 2,
			.npool = 2, .epoch = 0, .index = 0, .shards = 1, .shard = 0 }, &e), 0);
	assert_int_equal(akk_provider_init(&q, &d, &pre, &(struct akk_provider_config){
			.ds = &s, .shuffle = 1, .seed = 7, .bs = 4, .in = in, .classes = 2,
			.npool = 2, .epoch = 1, .index = 2, .shards = 1, .shard = 0 }, &e), 0);
	tu_workers_start(&w, 2);
	akk_provider_start(&p, &w);
	akk_provider_start(&q, &w);
	for (int i = 0; i < 5 + 2; i++) {	/* 5 batches per epoch */
		b = akk_provider_next(&p);
		akk_provider_recycle(&p, b);
	}
	for (int i = 0; i < 6; i++) {
		b = akk_provider_next(&p);
		c = akk_provider_next(&q);
		assert_int_equal(b->epoch, c->epoch);
		assert_int_equal(b->index, c->index);
		assert_memory_equal(b->x, c->x, (size_t)b->B * in * sizeof(float));
		akk_provider_recycle(&p, b);
		akk_provider_recycle(&q, c);
	}
	akk_workers_stop(&w);
	akk_provider_release(&p);
	akk_provider_release(&q);
	akk_workers_release(&w);
	akk_preprocess_release(&pre);
	akk_dataset_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_is_identity),
		cmocka_unit_test(test_flip),
		cmocka_unit_test(test_crop),
		cmocka_unit_test(test_translate),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_no_alloc),
		cmocka_unit_test(test_provider_train_only),
		cmocka_unit_test(test_resume_same_stream),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
