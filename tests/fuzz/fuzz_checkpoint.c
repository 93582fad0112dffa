/* fuzz_checkpoint.c - the checkpoint reader and what eval does with it.
 *
 * The input is a checkpoint file; its length field and CRC-32 are fixed
 * up first (fuzz_fix_checkpoint), so the fuzzer forges fields as an
 * attacker would instead of failing the checksum. Then, as `akkctl eval`
 * does: akk_checkpoint_read, akk_checkpoint_spec, akk_model_plan,
 * akk_checkpoint_match before anything is allocated, and for a network of
 * a few MB at eval's batch size the gates, akk_checkpoint_restore and
 * akk_checkpoint_release. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/checkpoint.h"
#include "fuzz_util.h"

#define EVAL_BATCH 256			/* akkctl eval's default --batch */
#define MAX_FLOATS (16.0 * 1024 * 1024)	/* 64 MB */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);
	struct akk_checkpoint ck = { 0 };
	struct akk_spec s = { 0 };
	struct akk_model m = { 0 };
	struct akk_gate *gates = NULL, **gp = NULL;
	struct akk_err e = { 0 };
	const char *path;

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	fuzz_fix_checkpoint(copy, size);
	path = fuzz_write("checkpoint.bin", copy, size);
	free(copy);
	if (akk_checkpoint_read(&ck, path, &e))
		return fuzz_refused("read", &e);
	if (akk_checkpoint_spec(&ck, &s, NULL, 0, &e)) {
		fuzz_refused("spec", &e);
		goto out;
	}
	if (akk_model_plan(&m, &s, &e)) {
		fuzz_refused("plan", &e);
		goto out;
	}
	fuzz_check_model(&m);
	if (akk_checkpoint_match(&ck, &m, path, &e)) {
		fuzz_refused("match", &e);
		goto out;
	}
	if (fuzz_model_floats(&m, EVAL_BATCH, 1) > MAX_FLOATS)
		goto out;
	gates = calloc(m.ngates, sizeof(*gates));
	gp = calloc(m.ngates, sizeof(*gp));
	if (!gates || !gp)
		goto out;
	for (int i = 0; i < m.ngates; i++) {
		gp[i] = &gates[i];
		if (akk_gate_init(&gates[i], &m.gates[i],
				  &(struct akk_gate_config){ .max_batch = EVAL_BATCH, .ntapes = 1,
							     .nevals = 1, .steps_per_epoch = 1,
							     .epochs = 1, .seed = s.seed }, &e))
			goto out;
	}
	if (getenv("FUZZ_VERBOSE"))
		fprintf(stderr, "restoring %d gates\n", m.ngates);
	if (akk_checkpoint_restore(&ck, gp, m.ngates, path, &e))
		fuzz_violation("akk_checkpoint_match accepted what restore refuses: %s", e.msg);
out:
	for (int i = 0; gates && i < m.ngates; i++)
		akk_gate_release(&gates[i]);
	free(gates);
	free(gp);
	akk_model_release(&m);
	akk_spec_release(&s);
	akk_checkpoint_release(&ck);
	return 0;
}
