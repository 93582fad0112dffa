/* layer.c - the table of layer kinds, keyed by the name used in configs. */
#include "layer.h"

#include <string.h>

static const struct akk_layer_ops *const kinds[] = {
	&akk_layer_dense, &akk_layer_conv2d, &akk_layer_maxpool2d,
	&akk_layer_avgpool2d, &akk_layer_flatten, &akk_layer_dropout,
	&akk_layer_batchnorm, &akk_layer_relu, &akk_layer_leaky_relu,
	&akk_layer_sigmoid, &akk_layer_tanh, &akk_layer_softplus,
};

const char *const akk_layer_names[] = {
	"dense", "conv2d", "maxpool2d", "avgpool2d", "flatten", "dropout",
	"batchnorm", "relu", "leaky_relu", "sigmoid", "tanh", "softplus", NULL,
};

const struct akk_layer_ops *akk_layer_find(const char *name)
{
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i]->name, name))
			return kinds[i];
	return NULL;
}
