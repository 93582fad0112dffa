/* fuzz_spec.c - the spec parser and the model planner on untrusted text.
 *
 * The input is a config file, optionally followed by a line "%%" and up to
 * eight KEY=VALUE lines, applied as --set overrides. The config goes
 * through akk_spec_load (from a file, as `akkctl check` reads it) and, when
 * it parses, akk_model_plan. Besides crashes, hangs and leaks, a finding
 * is a spec accepted with a float key out of its range as stored, a plan
 * whose sizes wrapped around, or a scalar with an explicit !!str tag
 * accepted for a numeric or boolean key (tags must be honoured or
 * rejected, never ignored). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <yaml.h>

#include "fuzz_util.h"

#define MAX_SETS 8

/* Keys whose value is a number or a boolean. */
static const char *const numeric_keys[] = {
	"seed", "epochs", "batch_size", "threads", "train", "validation",
	"checkpoint_every", "keep", "rank", "units", "filters", "kernel",
	"stride", "padding", "lr", "momentum", "beta1", "beta2", "rho", "eps",
	"weight_decay", "clip_norm", "gamma", "step_epochs", "min_lr",
	"warmup_epochs", "rate", "alpha", "init_value", "delta", "mean", "std",
	"scale", "dense", "maxpool2d", "avgpool2d", "dropout", "leaky_relu",
	"bias", "weight_stashing", "start", "end", "output_padding", "vocab",
	"micro_batches", "accumulate", "horizon", "window", "seq_len",
	"log_every_steps", "return_sequences", "stateful", NULL,
};

static int numeric_key(const char *k)
{
	for (int i = 0; numeric_keys[i]; i++)
		if (!strcmp(k, numeric_keys[i]))
			return 1;
	return 0;
}

/* Whether the text holds a mapping value `KEY: !!str ...` for a numeric
 * key: an explicit tag the spec would have to honour (and so reject) or
 * reject. Walks libyaml's events, tracking key/value turns per mapping. */
static int str_tag_on_numeric_key(const uint8_t *text, size_t len)
{
	yaml_parser_t p;
	yaml_event_t ev;
	/* per open collection: 1 mapping expecting a key, 2 mapping expecting
	 * a value, 0 sequence */
	unsigned char stack[128];
	int depth = 0, found = 0, done = 0;
	char key[32] = "";

	if (!yaml_parser_initialize(&p))
		return 0;
	yaml_parser_set_input_string(&p, text, len);
	while (!done && !found && depth < 120) {
		if (!yaml_parser_parse(&p, &ev))
			break;
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_MAPPING_START_EVENT:
		case YAML_SEQUENCE_START_EVENT:
			if (depth && stack[depth - 1] == 2)
				stack[depth - 1] = 1;
			else if (depth && stack[depth - 1] == 1)
				stack[depth - 1] = 2;	/* a complex key */
			stack[depth++] = ev.type == YAML_MAPPING_START_EVENT ? 1 : 0;
			break;
		case YAML_MAPPING_END_EVENT:
		case YAML_SEQUENCE_END_EVENT:
			if (depth)
				depth--;
			break;
		case YAML_SCALAR_EVENT:
		case YAML_ALIAS_EVENT:
			if (!depth || stack[depth - 1] == 0)
				break;
			if (stack[depth - 1] == 1) {
				snprintf(key, sizeof(key), "%s",
					 ev.type == YAML_SCALAR_EVENT ?
					 (const char *)ev.data.scalar.value : "");
				stack[depth - 1] = 2;
				break;
			}
			stack[depth - 1] = 1;
			if (ev.type == YAML_SCALAR_EVENT && ev.data.scalar.tag &&
			    !ev.data.scalar.plain_implicit &&
			    !ev.data.scalar.quoted_implicit &&
			    !strcmp((const char *)ev.data.scalar.tag, YAML_STR_TAG) &&
			    numeric_key(key))
				found = 1;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	return found;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *sets[MAX_SETS];
	char *buf = malloc(size + 1), *cut, *line;
	size_t cfg_len = size;
	int nsets = 0;
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_err e = { 0 };

	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	/* "%%" on a line of its own starts the overrides */
	if (!strncmp(buf, "%%\n", 3))
		cut = buf;
	else if ((cut = strstr(buf, "\n%%\n")))
		cut++;
	if (cut) {
		cfg_len = (size_t)(cut - buf);
		line = cut + 3;
		while (nsets < MAX_SETS && *line) {
			char *nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			if (*line)
				sets[nsets++] = line;
			if (!nl)
				break;
			line = nl + 1;
		}
	}
	if (!akk_spec_load(&s, fuzz_write("config.yaml", buf, cfg_len), sets,
			   nsets, &e)) {
		fuzz_check_spec(&s);
		if (fuzz_checking("tag") && str_tag_on_numeric_key(data, cfg_len))
			fuzz_violation("a '!!str' tag on a numeric key was ignored");
		if (!akk_model_plan(&m, &s, &e)) {
			fuzz_check_model(&m);
			akk_model_release(&m);
		}
		akk_spec_release(&s);
	}
	free(buf);
	return 0;
}
