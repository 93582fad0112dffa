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


/* The list of ints of the override p (KEY=[a, b, ...]) after key, into v
 * (room for max): their count, or -1 when p is not one. */
static int list_of(const char *p, const char *key, int *v, int max)
{
	size_t kl = strlen(key);
	int k = 0;

	if (strncmp(p, key, kl) || p[kl] != '=' || p[kl + 1] != '[')
		return -1;
	p += kl + 2;
	while (k < max && *p != ']') {
		char *end;
		long x = strtol(p, &end, 10);
		if (end == p || x < 0 || x > AKK_MAX_LAYERS)
			return -1;
		v[k++] = (int)x;
		p = end + strspn(end, ", ");
	}
	return *p == ']' ? k : -1;
}

/* The split recorded in the checkpoint resume picks, if any: the layers
 * of its gates into sizes (*nsizes of them), the graph layers it
 * unfolded into unfold (*nunfold; both arrays with room for max).
 * Returns 1 when found, 0 when not. */
static int split_of_checkpoint(const char *resume, int max, int *sizes, int *nsizes,
			       int *unfold, int *nunfold)
{
	struct akk_checkpoint ck;
	struct akk_err e = { 0 };
	char *path = NULL;
	int found = 0;

	if (ckpt_pick(resume, 0, &path, &e) < 0 || akk_checkpoint_read(&ck, path, &e)) {
		free(path);
		return 0;
	}
	/* the last split recorded, with the unfold recorded after it */
	*nunfold = 0;
	for (int i = ck.nsets - 1; i >= 0 && !found; i--) {
		int n = list_of(ck.sets[i], "network.gates.unfold", unfold, max);
		if (n >= 0)
			*nunfold = n;
		n = list_of(ck.sets[i], "network.gates.split", sizes, max);
		if (n > 0) {
			*nsizes = n;
			found = 1;
		}
	}
	akk_checkpoint_release(&ck);
	free(path);
	return found;
}

int cli_auto_split(struct akk_spec *s, const char *resume, int profile,
		   struct akk_err *e)
{
	int *buf, ns = 0, nu = 0, max;
	int rc, cores = akk_cores();

	const char *np = getenv("OMPI_COMM_WORLD_SIZE");

	if (!s->auto_gates || s->auto_split)
		return 0;
	/* under mpirun every rank must make the same split: no timings, and
	 * the branches of a graph count as on cores of their own */
	if (np && atoi(np) > 1) {
		profile = 0;
		cores = AKK_MAX_GATES;
	}
	if (!resume)
		return akk_balance_cores(s, profile, cores, NULL, e);
	/* a resumed run keeps its split, whatever the timings say now */
	max = akk_spec_nlayers(s) + 1;
	if (!(buf = calloc((size_t)max * 2, sizeof(int))))
		return akk_err_set(e, "out of memory");
	rc = split_of_checkpoint(resume, max, buf, &ns, buf + max, &nu) ?
		akk_balance_apply_unfold(s, buf, ns, buf + max, nu, e) :
		akk_balance_cores(s, profile, cores, NULL, e);
	free(buf);
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
	double *cost = NULL;
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
	if (!(cost = calloc((size_t)akk_balance_max_layers(&s), sizeof(*cost)))) {
		rc = cli_errorf(EXIT_RUNTIME, "out of memory");
		goto out;
	}
	if (akk_balance(&s, profile, cost, &e) ||
	    akk_spec_explicit_yaml(&s, outdir ? dirname(outdir) : NULL, &text, &len, &e)) {
		rc = cli_report(&e, EXIT_USAGE);
		goto out;
	}
	/* the config to a file: the split's costs to standard output */
	if (out)
		cli_print_split(&s, cost, profile);
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
	free(cost);
	free(outdir);
	free(text);
	akk_spec_release(&s);
	return rc;
}
