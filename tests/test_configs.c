/* test_configs.c - the corpus of bad configs, through `akkctl check`.
 *
 * Every NAME.yaml in tests/configs/bad starts with "# expect: LINE", LINE
 * being exactly what akkctl prints on stderr after "akkctl: ", with the file
 * named as passed (tests/configs/bad/NAME.yaml). Each is checked for exit
 * code 2 and that first stderr line. Run from the top directory. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define DIR_BAD "tests/configs/bad"
#define MIN_FILES 25

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted NAME.yaml files of DIR_BAD (caller frees). */
static char **list_bad(int *n)
{
	DIR *d = opendir(DIR_BAD);
	struct dirent *de;
	char **names = NULL;
	int cap = 0;

	assert_non_null(d);
	*n = 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len < 6 || strcmp(de->d_name + len - 5, ".yaml"))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			names = realloc(names, (size_t)cap * sizeof(*names));
			assert_non_null(names);
		}
		names[*n] = strdup(de->d_name);
		assert_non_null(names[*n]);
		(*n)++;
	}
	closedir(d);
	qsort(names, (size_t)*n, sizeof(*names), by_name);
	return names;
}

/* The text after "# expect: " on the first line of path. */
static void read_expect(const char *path, char *buf, size_t size)
{
	static const char tag[] = "# expect: ";
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	assert_non_null(fgets(buf, (int)size, f));
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	if (strncmp(buf, tag, strlen(tag))) {
		fprintf(stderr, "%s: first line is not '# expect: ...'\n", path);
		fail();
	}
	memmove(buf, buf + strlen(tag), strlen(buf + strlen(tag)) + 1);
}

static void test_corpus_size(void **ctx)
{
	int n;
	char **names = list_bad(&n);

	(void)ctx;
	assert_true(n >= MIN_FILES);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static void test_each_bad_config(void **ctx)
{
	char path[512], expect[1024], want[1100], err[8192];
	int n, bad = 0;
	char **names = list_bad(&n);

	(void)ctx;
	for (int i = 0; i < n; i++) {
		const char *argv[] = { tu_akkctl(), "check", path, NULL };
		int rc;

		snprintf(path, sizeof(path), DIR_BAD "/%s", names[i]);
		read_expect(path, expect, sizeof(expect));
		snprintf(want, sizeof(want), "akkctl: %s", expect);
		rc = tu_run(argv, NULL, 0, err, sizeof(err));
		err[strcspn(err, "\n")] = '\0';
		if (rc != 2 || strcmp(err, want)) {
			fprintf(stderr, "%s: exit %d (want 2)\n  got:  %s\n"
				"  want: %s\n", path, rc, err, want);
			bad++;
		}
		free(names[i]);
	}
	free(names);
	assert_int_equal(bad, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_corpus_size),
		cmocka_unit_test(test_each_bad_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
