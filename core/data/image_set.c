/* image_set.c - class folders, image lists and predict's images read
 * into one data set of bytes. */
#include "data/image_set.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/checked.h"
#include "data/image.h"

/* A growing list of owned strings. */
struct strs {
	char **v;
	size_t n, cap;
};

static void strs_free(struct strs *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* Append s (taken; freed on failure). */
static int strs_add(struct strs *l, char *s, struct akk_err *e)
{
	if (s && l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		char **v = realloc(l->v, cap * sizeof(*v));
		if (!v) {
			free(s);
			s = NULL;
		} else {
			l->v = v;
			l->cap = cap;
		}
	}
	if (!s)
		return akk_err_set(e, "out of memory listing images");
	l->v[l->n++] = s;
	return 0;
}

static int by_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *dir, const char *name)
{
	size_t n = strlen(dir) + strlen(name) + 2;
	char *p = malloc(n);

	if (p)
		snprintf(p, n, "%s/%s", dir, name);
	return p;
}

/* The names in dir (not '.'-names) of sub-folders (dirs 1) or of image
 * files (dirs 0), in byte order, into out. */
static int scan(const char *dir, int dirs, struct strs *out, struct akk_err *e)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (!dp)
		return akk_err_set(e, "cannot open folder '%s': %s", dir, strerror(errno));
	while (!rc && (de = readdir(dp))) {
		struct stat st;
		char *p;
		int ok;

		if (de->d_name[0] == '.')
			continue;
		if (!(p = join(dir, de->d_name))) {
			rc = akk_err_set(e, "out of memory listing images");
			break;
		}
		ok = !stat(p, &st) && (dirs ? S_ISDIR(st.st_mode) :
				       S_ISREG(st.st_mode) && akk_image_name(de->d_name));
		free(p);
		if (ok && out->n >= AKK_IMAGE_MAX_FILES)
			rc = akk_err_at(e, dir, 0, 0, "more than %d entries", AKK_IMAGE_MAX_FILES);
		else if (ok)
			rc = strs_add(out, strdup(de->d_name), e);
	}
	closedir(dp);
	if (rc)
		strs_free(out);
	else if (out->n)
		qsort(out->v, out->n, sizeof(*out->v), by_str);
	return rc;
}

/* Read the n images of paths into d, c x h x w each (h, w 0: the first
 * image's); labels (n, or NULL) become d's, taken. On failure d is
 * released (its class names too). */
static int read_all(struct akk_dataset *d, const struct strs *paths, int32_t *labels,
		    int c, int h, int w, struct akk_err *e)
{
	size_t in, total;

	d->labels = labels;
	if (paths->n && (!h || !w)) {	/* the first image's size for all */
		struct akk_image im;
		if (akk_image_load(&im, paths->v[0], c, 0, 0, e)) {
			akk_dataset_release(d);
			return -1;
		}
		h = im.h;
		w = im.w;
		akk_image_release(&im);
	}
	in = (size_t)c * h * w;
	if (!paths->n || !akk_mul_ok(paths->n, in, &total) || !(d->x8 = malloc(total))) {
		akk_dataset_release(d);
		return akk_err_set(e, "out of memory for %zu images of %d x %d x %d", paths->n,
				   c, h, w);
	}
	d->n = paths->n;
	d->in = in;
	d->c = c;
	d->h = h;
	d->w = w;
	d->xtype = AKK_X_U8;
	for (size_t i = 0; i < paths->n; i++) {
		struct akk_image im;
		if (akk_image_load(&im, paths->v[i], c, h, w, e)) {
			akk_dataset_release(d);
			return -1;
		}
		memcpy(d->x8 + i * in, im.x, in);
		akk_image_release(&im);
	}
	return 0;
}

/* Append the image files directly in dir to paths, each with label (when
 * labels is not NULL: grown alongside). *none: dir held none. */
static int add_folder(struct strs *paths, int32_t **labels, int32_t label, const char *dir,
		      int *none, struct akk_err *e)
{
	struct strs f;

	if (scan(dir, 0, &f, e))
		return -1;
	*none = f.n == 0;
	if (paths->n + f.n > AKK_IMAGE_MAX_FILES) {
		strs_free(&f);
		return akk_err_at(e, dir, 0, 0, "more than %d images", AKK_IMAGE_MAX_FILES);
	}
	if (labels) {
		int32_t *l = realloc(*labels, (paths->n + f.n + 1) * sizeof(**labels));
		if (!l) {
			strs_free(&f);
			return akk_err_set(e, "out of memory listing images");
		}
		*labels = l;
		for (size_t i = 0; i < f.n; i++)
			l[paths->n + i] = label;
	}
	for (size_t i = 0; i < f.n; i++)
		if (strs_add(paths, join(dir, f.v[i]), e)) {
			strs_free(&f);
			return -1;
		}
	strs_free(&f);
	return 0;
}

int akk_image_folder_dataset(struct akk_dataset *d, const char *dir, int c, int h,
			     int w, struct akk_err *e)
{
	struct strs classes = { 0 }, paths = { 0 }, root = { 0 };
	int32_t *labels = NULL;
	int rc = -1, none;

	memset(d, 0, sizeof(*d));
	if (scan(dir, 1, &classes, e) || scan(dir, 0, &root, e))
		goto out;
	if (root.n) {
		char *p = join(dir, root.v[0]);
		akk_err_at(e, p ? p : dir, 0, 0,
			   "an image outside any class folder: images go in %s/CLASS/", dir);
		free(p);
		goto out;
	}
	if (!classes.n || classes.n > AKK_IMAGE_MAX_CLASSES) {
		akk_err_at(e, dir, 0, 0, "%zu class folders: a folder of images needs 1 to %d (%s/CLASS/IMAGE.png)",
			   classes.n, AKK_IMAGE_MAX_CLASSES, dir);
		goto out;
	}
	for (size_t k = 0; k < classes.n; k++) {
		char *sub = join(dir, classes.v[k]);
		int bad = !sub || add_folder(&paths, &labels, (int32_t)k, sub, &none, e);
		if (!bad && none)
			akk_err_at(e, sub, 0, 0, "class folder '%s' holds no .png, .jpg or .jpeg files",
				   classes.v[k]);
		free(sub);
		if (bad && !sub)
			akk_err_set(e, "out of memory listing images");
		if (bad || none)
			goto out;
	}
	if (read_all(d, &paths, labels, c, h, w, e)) {
		labels = NULL;
		goto out;
	}
	labels = NULL;
	d->classes = (int)classes.n;
	d->class_names = classes.v;	/* taken */
	memset(&classes, 0, sizeof(classes));
	rc = 0;
out:
	free(labels);
	strs_free(&classes);
	strs_free(&paths);
	strs_free(&root);
	return rc;
}

int akk_image_inputs(struct akk_dataset *d, const char *path, int c, int h, int w,
		     struct akk_err *e)
{
	struct strs subs = { 0 }, paths = { 0 };
	struct stat st;
	int rc = -1, none;

	memset(d, 0, sizeof(*d));
	if (stat(path, &st))
		return akk_err_set(e, "cannot open '%s': %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		struct akk_image im;
		if (akk_image_load(&im, path, c, h, w, e))
			return -1;
		d->n = 1;
		d->in = (size_t)c * im.h * im.w;
		d->c = c;
		d->h = im.h;
		d->w = im.w;
		d->xtype = AKK_X_U8;
		d->x8 = im.x;	/* taken */
		return 0;
	}
	if (add_folder(&paths, NULL, 0, path, &none, e) || scan(path, 1, &subs, e))
		goto out;
	for (size_t k = 0; k < subs.n; k++) {
		char *sub = join(path, subs.v[k]);
		int bad = !sub || add_folder(&paths, NULL, 0, sub, &none, e);
		free(sub);
		if (bad) {
			if (!sub)
				akk_err_set(e, "out of memory listing images");
			goto out;
		}
	}
	if (!paths.n) {
		akk_err_at(e, path, 0, 0, "no .png, .jpg or .jpeg files in the folder or its sub-folders");
		goto out;
	}
	rc = read_all(d, &paths, NULL, c, h, w, e);
out:
	strs_free(&subs);
	strs_free(&paths);
	return rc;
}

/* --- image lists ---------------------------------------------------------- */

/* A label that is a class number: digits only, below the class limit. */
static int class_number(const char *s)
{
	long v = 0;

	if (!*s || strlen(s) > 5)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v < AKK_IMAGE_MAX_CLASSES ? (int)v : -1;
}

/* Number the labels: class numbers when all are, else names in byte
 * order (d's class_names). */
static int number_labels(struct akk_dataset *d, const struct strs *lab, int32_t *labels,
			 struct akk_err *e)
{
	struct strs names = { 0 };
	size_t i, k = 0;
	int top = -1;

	for (i = 0; i < lab->n && class_number(lab->v[i]) >= 0; i++)
		if (class_number(lab->v[i]) > top)
			top = class_number(lab->v[i]);
	if (i == lab->n) {
		for (i = 0; i < lab->n; i++)
			labels[i] = class_number(lab->v[i]);
		d->classes = top + 1;
		return 0;
	}
	for (i = 0; i < lab->n; i++)
		if (strs_add(&names, strdup(lab->v[i]), e))
			goto fail;
	qsort(names.v, names.n, sizeof(*names.v), by_str);
	for (i = 0; i < names.n; i++) {	/* unique */
		if (k && !strcmp(names.v[k - 1], names.v[i]))
			free(names.v[i]);
		else
			names.v[k++] = names.v[i];
	}
	names.n = k;
	if (k > AKK_IMAGE_MAX_CLASSES) {
		akk_err_set(e, "%zu class names, at most %d", k, AKK_IMAGE_MAX_CLASSES);
		goto fail;
	}
	for (i = 0; i < lab->n; i++) {
		char **at = bsearch(&lab->v[i], names.v, names.n, sizeof(*names.v), by_str);
		labels[i] = (int32_t)(at - names.v);
	}
	d->classes = (int)names.n;
	d->class_names = names.v;	/* taken */
	return 0;
fail:
	strs_free(&names);
	return -1;
}

/* One line "PATH LABEL" (NUL-terminated, no newline) of the list at
 * list (folder base) into paths and labs. */
static int list_line(char *s, int line, const char *list, const char *base,
		     struct strs *paths, struct strs *labs, struct akk_err *e)
{
	size_t n;
	char *lab;

	s += strspn(s, " \t");
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
		s[--n] = '\0';
	if (!n || s[0] == '#')
		return 0;
	lab = s + n;
	while (lab > s && lab[-1] != ' ' && lab[-1] != '\t')
		lab--;
	if (lab == s)
		return akk_err_at(e, list, line, 1, "'%.80s': expected an image path, white space and a label",
				  s);
	for (char *t = lab; t > s && (t[-1] == ' ' || t[-1] == '\t'); t--)
		t[-1] = '\0';
	if (paths->n >= AKK_IMAGE_MAX_FILES)
		return akk_err_at(e, list, line, 1, "more than %d images", AKK_IMAGE_MAX_FILES);
	if (strs_add(labs, strdup(lab), e))
		return -1;
	return strs_add(paths, s[0] == '/' || !base ? strdup(s) : join(base, s), e);
}

static char *slurp_list(const char *path, struct akk_err *e)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	long size;

	if (!f) {
		akk_err_set(e, "cannot open '%s': %s", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		akk_err_at(e, path, 0, 0, "cannot read: not a regular file");
	else if (size > AKK_IMAGE_MAX_LIST_BYTES)
		akk_err_at(e, path, 0, 0, "image list of %ld bytes is larger than %ld", size,
			   AKK_IMAGE_MAX_LIST_BYTES);
	else if (!(p = malloc((size_t)size + 1)))
		akk_err_set(e, "out of memory reading '%s'", path);
	else if (fread(p, 1, (size_t)size, f) != (size_t)size) {
		akk_err_at(e, path, 0, 0, "cannot read: %s", strerror(errno));
		free(p);
		p = NULL;
	} else if (memchr(p, '\0', (size_t)size)) {
		akk_err_at(e, path, 0, 0, "not a text file: it holds a NUL byte");
		free(p);
		p = NULL;
	} else
		p[size] = '\0';
	fclose(f);
	return p;
}

int akk_image_list_dataset(struct akk_dataset *d, const char *path, int c, int h,
			   int w, struct akk_err *e)
{
	struct strs paths = { 0 }, labs = { 0 };
	char *text = slurp_list(path, e), *base = NULL, *slash, *s, *nl;
	int32_t *labels = NULL;
	int line = 1, rc = -1;

	memset(d, 0, sizeof(*d));
	if (!text)
		return -1;
	if ((slash = strrchr(path, '/')) && !(base = strndup(path, (size_t)(slash - path) + !(slash - path)))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	for (s = text; *s; s = nl + 1, line++) {
		if ((nl = strchr(s, '\n')))
			*nl = '\0';
		if (list_line(s, line, path, base, &paths, &labs, e))
			goto out;
		if (!nl)
			break;
	}
	if (!paths.n) {
		akk_err_at(e, path, 0, 0, "the image list names no images");
		goto out;
	}
	if (!(labels = malloc(paths.n * sizeof(*labels)))) {
		akk_err_set(e, "out of memory");
		goto out;
	}
	if (number_labels(d, &labs, labels, e))
		goto out;
	rc = read_all(d, &paths, labels, c, h, w, e);
	labels = NULL;
out:
	free(labels);
	free(text);
	free(base);
	strs_free(&paths);
	strs_free(&labs);
	return rc;
}
