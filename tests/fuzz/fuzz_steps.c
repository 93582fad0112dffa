/* fuzz_steps.c - the per-step metrics reader (io/steps.h), as akkctl plot
 * reads steps.csv, and the resume's cut of a steps file (akk_steps_open
 * with the first input byte as the step kept). Besides crashes, hangs and
 * leaks, a finding is a loaded file whose rows break what the reader
 * promises (steps from 1 strictly increasing, epochs from 1, finite steps,
 * epochs, samples and seconds), and a cut file the reader then refuses
 * that it accepted before. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "io/steps.h"

static void check_rows(const struct akk_step_rows *r)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct akk_step_row *w = &r->rows[i];

		if (w->step < 1 || (i && w->step <= r->rows[i - 1].step))
			fuzz_violation("row %zu: step %ld after %ld", i, w->step,
				       i ? r->rows[i - 1].step : 0);
		if (w->epoch < 1 || w->samples < 0 || !isfinite(w->seconds))
			fuzz_violation("row %zu: epoch %d, samples %ld, seconds %g", i,
				       w->epoch, w->samples, w->seconds);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct akk_step_rows r = { 0 };
	struct akk_steps s;
	struct akk_err e = { 0 };
	const char *path;
	int loaded;

	if (size < 1)
		return 0;
	path = fuzz_write("steps.csv", data + 1, size - 1);
	loaded = !akk_steps_load(&r, path, &e);
	if (loaded)
		check_rows(&r);
	else
		fuzz_refused("load", &e);
	/* the resume's cut keeps a prefix of the rows: still a steps file */
	if (!akk_steps_open(&s, path, 1, data[0], &e)) {
		akk_steps_close(&s, &e);
		if (loaded && r.n && r.rows[0].step <= data[0]) {
			struct akk_step_rows cut = { 0 };

			if (akk_steps_load(&cut, path, &e))
				fuzz_violation("the cut of a good file is refused: %s", e.msg);
			check_rows(&cut);
			if (cut.rows[cut.n - 1].step > data[0])
				fuzz_violation("the cut keeps step %ld past %d",
					       cut.rows[cut.n - 1].step, data[0]);
			akk_steps_release(&cut);
		}
	}
	akk_steps_release(&r);
	return 0;
}
