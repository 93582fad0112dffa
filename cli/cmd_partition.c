/* cmd_partition.c - akkctl partition: a gates: {auto: N} config split and
 * written back with its gates written out; and the split every command that
 * runs a network makes (cli_auto_split). */
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "ckpt_files.h"
#include "config/explicit.h"
#include "io/checkpoint.h"
#include "model/balance.h"


/* The split recorded in the checkpoint resume picks, if any: read into
 * sizes (s->auto_gates entries). Returns 1 when found, 0 when not. */
static int split_of_checkpoint(const char *resume, int n, int *sizes)
{
	struct akk_checkpoint ck;
	struct akk_err e = { 0 };
	char *path = NULL;
	int found = 0;
	static const char key[] = "network.gates.split=[";

	if (ckpt_pick(resume, 0, &path, &e) < 0 || akk_checkpoint_read(&ck, path, &e)) {
		free(path);
		return 0;
	}
	for (int i = ck.nsets - 1; i >= 0 && !found; i--) {
		const char *p = ck.sets[i];
		int k = 0;
		if (strncmp(p, key, sizeof(key) - 1))
			continue;
		p += sizeof(key) - 1;
		while (k < n) {
			char *end;
			long v = strtol(p, &end, 10);
			if (end == p || v < 1 || v > AKK_MAX_LAYERS)
				break;
			sizes[k++] = (int)v;
			p = end + strspn(end, ", ");
		}
		found = k == n && *p == ']';
	}
	akk_checkpoint_release(&ck);
	free(path);
	return found;
}

int cli_auto_split(struct akk_spec *s, const char *resume, int profile,
		   struct akk_err *e)
{
	int *sizes;
	int rc;

	const char *np = getenv("OMPI_COMM_WORLD_SIZE");

	if (!s->auto_gates || s->auto_split)
		return 0;
	/* under mpirun every rank must make the same split: no timings */
	if (np && atoi(np) > 1)
		profile = 0;
	if (!resume)
		return akk_balance(s, profile, NULL, e);
	/* a resumed run keeps its split, whatever the timings say now */
	if (!(sizes = calloc((size_t)s->auto_gates, sizeof(int))))
		return akk_err_set(e, "out of memory");
	rc = split_of_checkpoint(resume, s->auto_gates, sizes) ?
		akk_balance_apply(s, sizes, e) : akk_balance(s, profile, NULL, e);
	free(sizes);
	return rc;
}

int cmd_partition(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "no-profile", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct akk_spec s = { 0 };
	struct akk_err e = { 0 };
	const char *out = NULL;
	char *text = NULL, *outdir = NULL;
	size_t len = 0;
	int c, profile = 1, rc = EXIT_OK;
	FILE *f;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":o:Ph", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'P':
			profile = 0;
			break;
		case 'h':
			return cli_help("partition");
		default:
			return cli_bad_option("partition", c, argv);
		}
	}
	if (cli_operands("partition", argc, argv))
		return EXIT_USAGE;
	if (akk_spec_load(&s, argv[optind], NULL, 0, &e))
		return cli_report(&e, EXIT_USAGE);
	if (!s.auto_gates) {
		rc = cli_errorf(EXIT_USAGE, "%s: network.gates is a list already: partition needs gates: {auto: N}",
				argv[optind]);
		goto out;
	}
	/* written elsewhere than beside the config: its relative paths are
	 * rewritten to stay valid from the new file's directory */
	if (out && !(outdir = strdup(out))) {
		rc = cli_errorf(EXIT_RUNTIME, "out of memory");
		goto out;
	}
	if (akk_balance(&s, profile, NULL, &e) ||
	    akk_spec_explicit_yaml(&s, outdir ? dirname(outdir) : NULL, &text, &len, &e)) {
		rc = cli_report(&e, EXIT_USAGE);
		goto out;
	}
	if (!out) {
		if (fwrite(text, 1, len, stdout) != len || fflush(stdout))
			rc = cli_errorf(EXIT_RUNTIME, "cannot write the config to standard output");
	} else if (!(f = fopen(out, "w"))) {
		rc = cli_errorf(EXIT_RUNTIME, "cannot open '%s': %m", out);
	} else {
		size_t w = fwrite(text, 1, len, f);
		if ((fclose(f) | (w != len)))
			rc = cli_errorf(EXIT_RUNTIME, "cannot write '%s'", out);
	}
out:
	free(outdir);
	free(text);
	akk_spec_release(&s);
	return rc;
}
