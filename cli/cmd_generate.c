/* cmd_generate.c - akkctl generate: text sampled from a language model.
 *
 * The model is a checkpoint of a network trained on data.format: text
 * (data/text.h): its input is a window of T token ids, its output a class
 * per step, the byte after each. Generating feeds the window of the last T
 * tokens (the prime, then what was generated) through the network by the
 * inference library (api/akk.h, as predict does) and draws the next byte
 * from the distribution of the window's last real step, sharpened or
 * flattened by the temperature: p_i^(1/t), renormalised (the softmax of
 * the logits divided by t). While fewer than T tokens are known they fill
 * the window's first steps and the step of the last one is read; for a
 * network that reads its steps in order (lstm, gru, rnn forwards, dense
 * per step) the padding after it changes nothing. The draws come from the
 * seed alone: one seed, one text. */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/akk.h"
#include "base/rng.h"
#include "ckpt_files.h"
#include "cli.h"
#include "data/text.h"
#include "io/checkpoint.h"
#include "config/spec.h"

#define GENERATE_MAX_LENGTH (1 << 24)

/* One generation: its options, the model, the tokens so far. */
struct generate {
	const char *prime;		/* --prime, or NULL */
	int length;			/* --length */
	double temperature;		/* --temperature */
	uint64_t seed;			/* --seed */
	int seed_given;
	char *ckpath;
	struct akk_checkpoint ck;
	struct akk_spec spec;
	akk_model *m;
	int T, steps, C, V;		/* window, output steps, outputs, vocabulary */
	int32_t *tokens;		/* ntok of prime + length */
	size_t ntok;
	float *x, *prob;		/* the window (T), the output (steps x C) */
	double *w;			/* V weights of a draw */
	struct akk_err e;
	int rc;
};

/* The options: -1 to go on, else the exit status. */
static int generate_parse(struct generate *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "prime", required_argument, NULL, 'p' },
		{ "length", required_argument, NULL, 'n' },
		{ "temperature", required_argument, NULL, 't' },
		{ "seed", required_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":p:n:t:s:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p': g->prime = optarg; break;
		case 'n':
			if (cli_parse_int("--length", optarg, 0, GENERATE_MAX_LENGTH, &g->length))
				return cli_usage_error("generate");
			break;
		case 't':
			g->temperature = strtod(optarg, &end);
			if (end == optarg || *end || !(g->temperature > 0) || !isfinite(g->temperature)) {
				cli_errorf(EXIT_USAGE, "option '--temperature' needs a number above 0, got '%s'",
					   optarg);
				return cli_usage_error("generate");
			}
			break;
		case 's':
			g->seed = strtoull(optarg, &end, 10);
			if (end == optarg || *end || optarg[0] == '-') {
				cli_errorf(EXIT_USAGE, "option '--seed' needs a whole number of 0 or more, got '%s'",
					   optarg);
				return cli_usage_error("generate");
			}
			g->seed_given = 1;
			break;
		case 'h': return cli_help("generate");
		default: return cli_bad_option("generate", c, argv);
		}
	}
	if (cli_operands("generate", argc, argv))
		return EXIT_USAGE;
	return -1;
}

/* The checkpoint: a model of a text, its vocabulary, the buffers. */
static int generate_open(struct generate *g, const char *operand)
{
	char msg[8192];	/* akk_open's error */

	if (ckpt_load(operand, 1, &g->ckpath, &g->ck, &g->spec, &g->e))
		return -1;
	if (strcmp(g->spec.data.format, "text") || g->ck.nclass_names < 1)
		return akk_err_at(&g->e, g->ckpath, 0, 0,
				  "not a language model: generate needs a network trained on data.format text, this one read '%s'",
				  g->spec.data.format);
	if (!(g->m = akk_open(g->ckpath, msg, sizeof(msg))))
		return akk_err_set(&g->e, "%s", msg);
	g->T = (int)akk_input_size(g->m);
	g->steps = akk_steps(g->m);
	g->C = akk_outputs(g->m);
	g->V = g->ck.nclass_names < g->C ? g->ck.nclass_names : g->C;
	if (g->steps != g->T)
		return akk_err_at(&g->e, g->ckpath, 0, 0,
				  "not a language model: its network outputs %d step%s for a window of %d tokens",
				  g->steps, g->steps == 1 ? "" : "s", g->T);
	if (!g->seed_given)
		g->seed = g->spec.seed;
	g->rc = EXIT_RUNTIME;
	g->x = malloc((size_t)g->T * sizeof(*g->x));
	g->prob = malloc((size_t)g->steps * g->C * sizeof(*g->prob));
	g->w = malloc((size_t)g->V * sizeof(*g->w));
	g->tokens = malloc(((g->prime ? strlen(g->prime) : 1) + (size_t)g->length) *
			   sizeof(*g->tokens) + 1);
	if (!g->x || !g->prob || !g->w || !g->tokens)
		return akk_err_set(&g->e, "out of memory");
	return 0;
}

/* The prime's tokens; without one, a newline when the vocabulary has it,
 * else its first byte. A byte outside the vocabulary is bad input. */
static int generate_prime(struct generate *g)
{
	const char *p = g->prime ? g->prime : "";
	size_t n = strlen(p);

	if (g->prime && !n) {
		g->rc = EXIT_USAGE;
		return akk_err_set(&g->e, "--prime is empty: give at least one character");
	}
	for (size_t i = 0; i < n; i++) {
		int k = akk_text_token(g->ck.class_names, g->V, (uint8_t)p[i]);
		if (k < 0) {
			uint8_t c = (uint8_t)p[i];
			g->rc = EXIT_USAGE;
			if (c >= 0x20 && c < 0x7f)
				return akk_err_set(&g->e, "--prime: byte '%c' at offset %zu is not in the model's vocabulary of %d bytes",
						   c, i, g->V);
			return akk_err_set(&g->e, "--prime: byte 0x%02x at offset %zu is not in the model's vocabulary of %d bytes",
					   c, i, g->V);
		}
		g->tokens[g->ntok++] = k;
	}
	if (!n) {
		int k = akk_text_token(g->ck.class_names, g->V, '\n');
		g->tokens[g->ntok++] = k >= 0 ? k : 0;
	}
	return 0;
}

/* The next token: the window of the last T tokens through the network,
 * then a draw from its last real step at the temperature. */
static int generate_next(struct generate *g, struct akk_rng *r, int32_t *next)
{
	size_t k = g->ntok < (size_t)g->T ? g->ntok : (size_t)g->T;
	const int32_t *from = g->tokens + g->ntok - k;
	const float *p = g->prob + (k - 1) * (size_t)g->C;
	double top = -INFINITY, sum = 0, u;
	char msg[8192];

	for (int t = 0; t < g->T; t++)
		g->x[t] = (size_t)t < k ? (float)from[t] : 0;	/* 0: padding */
	if (akk_predict(g->m, g->x, (size_t)g->T, g->prob, (size_t)g->steps * g->C,
			msg, sizeof(msg)))
		return akk_err_set(&g->e, "%s", msg);
	/* p^(1/t) in logs, the largest 1: no underflow of every weight */
	for (int i = 0; i < g->V; i++) {
		g->w[i] = p[i] > 0 ? log((double)p[i]) / g->temperature : -INFINITY;
		if (g->w[i] > top)
			top = g->w[i];
	}
	for (int i = 0; i < g->V; i++)
		sum += g->w[i] = exp(g->w[i] - top);
	u = (double)akk_rng_uniform(r) * sum;
	*next = g->V - 1;
	for (int i = 0; i < g->V; i++) {
		if (u < g->w[i]) {
			*next = i;
			break;
		}
		u -= g->w[i];
	}
	/* a draw that rounding let past the end takes the last possible */
	while (*next > 0 && g->w[*next] == 0)
		(*next)--;
	return 0;
}

static int generate_run(struct generate *g)
{
	struct akk_rng r;

	akk_rng_seed(&r, g->seed, AKK_STREAM_GENERATE);
	for (int i = 0; i < g->length; i++) {
		int32_t next = 0;
		if (generate_next(g, &r, &next))
			return -1;
		g->tokens[g->ntok++] = next;
	}
	/* the prime as given, then the generated bytes, then a newline */
	if (g->prime)
		fputs(g->prime, stdout);
	for (size_t i = g->prime ? strlen(g->prime) : 1; i < g->ntok; i++)
		putchar((unsigned char)g->ck.class_names[g->tokens[i]][0]);
	putchar('\n');
	if (fflush(stdout) || ferror(stdout))
		return akk_err_set(&g->e, "cannot write standard output");
	g->rc = EXIT_OK;
	return 0;
}

int cmd_generate(int argc, char **argv)
{
	struct generate g = { .length = 200, .temperature = 1, .rc = EXIT_USAGE };
	int rc = generate_parse(&g, argc, argv);

	if (rc >= 0)
		return rc;
	if (generate_open(&g, argv[optind]) || generate_prime(&g) || generate_run(&g))
		cli_report(&g.e, g.rc);
	free(g.x);
	free(g.prob);
	free(g.w);
	free(g.tokens);
	akk_close(g.m);
	akk_spec_release(&g.spec);
	akk_checkpoint_release(&g.ck);
	free(g.ckpath);
	return g.rc;
}
