/*
 * fuzz_kaggle.c - libFuzzer target for core/formats/kaggle.c: Kaggle
 * ImageNet's LOC_synset_mapping.txt and LOC_val_solution.csv.
 *
 * Feeds: the input split at its first NUL byte (none: all synsets): the
 * part before as the synset mapping, the part after as the val solution.
 * Checks what layout=imagenet relies on: WNIDs strictly increasing, every
 * val label of 1..nval set and below nclasses.
 * Seeds: seeds.py's small pairs.
 */
#include "fuzz.h"
#include "formats/kaggle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nul = memchr(data, 0, size);
	size_t n1 = nul ? (size_t)(nul - data) : size;
	struct devkit dk;
	uint32_t i;

	memset(&dk, 0, sizeof(dk));
	if (kaggle_synsets_parse((const char *)data, n1, "fuzz-synsets", &dk) == 0) {
		for (i = 1; i < dk.nclasses; i++)
			FUZZ_CHECK(strncmp(dk.wnid[i - 1], dk.wnid[i], DEVKIT_WNID_MAX) < 0);
		if (nul && kaggle_val_parse((const char *)nul + 1, size - n1 - 1,
					    "fuzz-val", &dk) == 0)
			for (i = 0; i < dk.nval; i++)
				FUZZ_CHECK(dk.val_label[i] < dk.nclasses);
	}
	devkit_free(&dk);
	return 0;
}
