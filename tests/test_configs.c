/* test_configs.c - the corpus of bad configs, through `akkctl check`, and
 * every shipped config (configs/) parsed and planned.
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
#include "config/spec.h"
#include "model/model.h"

#define DIR_BAD "tests/configs/bad"
#define MIN_FILES 25

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted NAME.yaml files of dir (caller frees). */
static char **list_yaml(const char *dir, int *n)
{
	DIR *d = opendir(dir);
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
	char **names = list_yaml(DIR_BAD, &n);

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
	char **names = list_yaml(DIR_BAD, &n);

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

/* Every config the project ships parses and plans (its data need not be
 * there: a clean clone has none), so a layer kind or key it uses cannot
 * go missing unnoticed. */
static void test_each_shipped_config(void **ctx)
{
	int n, bad = 0;
	char **names = list_yaml("configs", &n);

	(void)ctx;
	assert_true(n >= 15);
	for (int i = 0; i < n; i++) {
		char path[300];
		struct akk_spec s;
		struct akk_model m;
		struct akk_err e = { 0 };

		snprintf(path, sizeof(path), "configs/%s", names[i]);
		if (akk_spec_load(&s, path, NULL, 0, &e)) {
			fprintf(stderr, "%s:%d:%d: %s\n", e.file, e.line, e.col, e.msg);
			bad++;
		} else {
			if (akk_model_plan(&m, &s, &e)) {
				fprintf(stderr, "%s: %s\n", path, e.msg);
				bad++;
			} else {
				akk_model_release(&m);
			}
			akk_spec_release(&s);
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
		cmocka_unit_test(test_each_shipped_config),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
