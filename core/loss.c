/* loss.c - softmax/sigmoid cross-entropy, MSE, MAE and Huber over a batch. */
#include "loss.h"

#include <math.h>
#include <string.h>

const char *const akk_loss_names[] = {
	"softmax_cross_entropy", "sigmoid_cross_entropy", "mse", "mae", "huber",
	NULL,
};

const char *akk_loss_name(enum akk_loss_kind k)
{
	return (unsigned)k <= AKK_LOSS_HUBER ? akk_loss_names[k] : NULL;
}

int akk_loss_find(const char *name)
{
	for (int i = 0; akk_loss_names[i]; i++)
		if (!strcmp(akk_loss_names[i], name))
			return i;
	return -1;
}
