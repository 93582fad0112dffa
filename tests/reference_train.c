/* reference_train.c - train a config with the sequential reference trainer.
 *
 * Not a user command: the oracle the actor schedules are tested against,
 * run on real data to show the numerics reach the expected accuracy
 * (`make reference CONFIG=configs/akkordeon.yaml`). Prints one line per
 * epoch: training loss, validation loss and accuracy, seconds. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "data/open.h"
#include "model/model.h"
#include "model/reference.h"
#include "config/spec.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	struct akk_spec s;
	struct akk_model m;
	struct akk_dataset train, val;
	struct akk_reference r;
	struct akk_err e = { 0 };
	char msg[1200];

	if (argc < 2) {
		fprintf(stderr, "usage: reference_train CONFIG [KEY=VALUE]...\n");
		return 2;
	}
	if (akk_spec_load(&s, argv[1], (const char *const *)argv + 2, argc - 2, &e) ||
	    akk_model_plan(&m, &s, &e) ||
	    akk_data_open(&train, &s.data, AKK_DATA_TRAIN, &e) ||
	    akk_data_open(&val, &s.data, AKK_DATA_VAL, &e) ||
	    akk_reference_init(&r, &m, &train, &e))
		goto fail;
	akk_float_mode();
	akk_blas_threads(1);	/* as the actors run it (pool.h) */
	printf("epoch,train_loss,train_acc,val_loss,val_acc,seconds\n");
	for (int ep = 0; ep < s.sched.epochs; ep++) {
		double loss = 0, vloss, vacc, t0 = now();
		long correct = 0;
		for (long i = 0; i < r.per_epoch; i++)
			if (akk_reference_step(&r, &loss, &correct, &e))
				goto fail;
		double t1 = now();
		if (akk_reference_evaluate(&r, &val, &vloss, &vacc, &e))
			goto fail;
		printf("%d,%.5f,%.4f,%.5f,%.4f,%.3f\n", ep + 1, loss / train.n,
		       (double)correct / ((double)train.n * m.steps), vloss, vacc, t1 - t0);
		fflush(stdout);
	}
	akk_reference_release(&r);
	akk_dataset_release(&train);
	akk_dataset_release(&val);
	akk_model_release(&m);
	akk_spec_release(&s);
	return 0;
fail:
	akk_err_format(&e, msg, sizeof(msg));
	fprintf(stderr, "reference_train: %s\n", msg);
	return 1;
}
