/* optim.c - SGD family, RMSProp, Adam family; LR schedules. */
#include "optim.h"

#include <math.h>
#include <string.h>

const char *const akk_optim_names[] = {
	"sgd", "momentum", "nesterov", "rmsprop", "adam", "adamw", "radam", NULL,
};
const char *const akk_lr_names[] = {
	"constant", "step", "exponential", "cosine", NULL,
};

static int find(const char *const *names, const char *name)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], name))
			return i;
	return -1;
}

const char *akk_optim_name(enum akk_optim_kind k)
{
	return (unsigned)k <= AKK_OPT_RADAM ? akk_optim_names[k] : NULL;
}

int akk_optim_find(const char *name)
{
	return find(akk_optim_names, name);
}

const char *akk_lr_name(enum akk_lr_kind k)
{
	return (unsigned)k <= AKK_LR_COSINE ? akk_lr_names[k] : NULL;
}

int akk_lr_find(const char *name)
{
	return find(akk_lr_names, name);
}
