/* image_set.h - data sets made of PNG and JPEG files (data/image.h).
 *
 * Three ways to name the files:
 *   - a folder of class folders (Keras' image_dataset_from_directory,
 *     torchvision's ImageFolder): DIR/CLASS/IMAGE. The classes are the
 *     sub-folders' names in byte order (strcmp), numbered from 0, and are
 *     the data set's class names; the images are the files directly in
 *     each class folder whose names end in .png, .jpg or .jpeg (any case),
 *     in byte order. Names starting with '.' are skipped; an image file
 *     directly in DIR, a class folder without images, and a DIR without
 *     class folders are errors.
 *   - an image list (darknet's lists, with the label on the line): one
 *     image a line, its path, white space, its label (the line's last
 *     word, so paths may hold spaces, but not lead with one); blank
 *     lines and lines starting with '#' are skipped; a relative path is relative to the list's
 *     folder. When every label is a whole number from 0 to
 *     AKK_IMAGE_MAX_CLASSES - 1, the labels are class numbers (classes =
 *     the highest + 1, no names); otherwise every label is a class name,
 *     the classes being the names in byte order.
 *   - unlabelled input (akkctl predict): one image file, or a folder: the
 *     images directly in it, then those of each sub-folder, folders and
 *     files in byte order (a folder of class folders works).
 * Every image is read with the channels and size of network.input
 * [C, H, W] (data/image.h: converted channels, never resized); h and w 0
 * (predict on a flat network) take the first image's size for all. The
 * first image that does not fit, cannot be read or is corrupt stops the
 * read with an error naming it. At most AKK_IMAGE_MAX_FILES images a set. */
#ifndef AKK_IMAGE_SET_H
#define AKK_IMAGE_SET_H

#include "base/err.h"
#include "data/dataset.h"

#define AKK_IMAGE_MAX_FILES (1 << 24)
#define AKK_IMAGE_MAX_CLASSES 65536
/* The longest image list read, in bytes. */
#define AKK_IMAGE_MAX_LIST_BYTES ((long)256 << 20)

/* The images of dir's class folders, labelled, into d (bytes, c x h x w). */
int akk_image_folder_dataset(struct akk_dataset *d, const char *dir, int c, int h,
			     int w, struct akk_err *e);
/* The images of the list file at path, labelled, into d. */
int akk_image_list_dataset(struct akk_dataset *d, const char *path, int c, int h,
			   int w, struct akk_err *e);
/* One image file or a folder of them, unlabelled, into d (h, w 0: the
 * file's size, the first file's for a folder). */
int akk_image_inputs(struct akk_dataset *d, const char *path, int c, int h, int w,
		     struct akk_err *e);

#endif
