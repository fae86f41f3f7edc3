/*
 * test_kaggle.c - core/formats/kaggle.c: Kaggle ImageNet's synset mapping
 * and val solution, good and malformed (the whole-tree comparison with the
 * release is test_zip.sh's).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "formats/kaggle.h"

static const char synsets[] =
	"n01440764 tench, Tinca tinca\n"
	"n01443537 goldfish, Carassius auratus\r\n"
	"n01484850 great white shark\n";

Test(kaggle, synsets_and_val_labels)
{
	static const char val[] =
		"ImageId,PredictionString\n"
		"ILSVRC2012_val_00000003,n01440764 1 2 3 4 n01484850 5 6 7 8\n"
		"ILSVRC2012_val_00000001,n01484850 1 2 3 4 \r\n"
		"ILSVRC2012_val_00000002,n01443537 9 9 9 9\n";
	struct devkit dk;

	memset(&dk, 0, sizeof(dk));
	cr_assert_eq(kaggle_synsets_parse(synsets, strlen(synsets), "s", &dk), 0);
	cr_assert_eq(dk.nclasses, 3);
	cr_assert_str_eq(dk.wnid[1], "n01443537");
	cr_assert_str_eq(dk.words[1], "goldfish, Carassius auratus");
	cr_assert_eq(kaggle_val_parse(val, strlen(val), "v", &dk), 0);
	cr_assert_eq(dk.nval, 3);
	cr_assert_eq(dk.val_label[0], 2);
	cr_assert_eq(dk.val_label[1], 1);
	cr_assert_eq(dk.val_label[2], 0);
	devkit_free(&dk);
}

static int synsets_rc(const char *text)
{
	struct devkit dk;
	int rc;

	memset(&dk, 0, sizeof(dk));
	rc = kaggle_synsets_parse(text, strlen(text), "s", &dk);
	devkit_free(&dk);
	return rc;
}

Test(kaggle, bad_synsets)
{
	cr_assert_eq(synsets_rc(""), -EINVAL);
	cr_assert_eq(synsets_rc("n0144076 short\n"), -EINVAL);
	cr_assert_eq(synsets_rc("n01443537 b\nn01440764 a\n"), -EINVAL);	/* order */
	cr_assert_eq(synsets_rc("n01440764 a\nn01440764 a\n"), -EINVAL);	/* repeat */
	cr_assert_eq(synsets_rc("x01440764 a\n"), -EINVAL);
}

static int val_rc(const char *text)
{
	struct devkit dk;
	int rc;

	memset(&dk, 0, sizeof(dk));
	cr_assert_eq(kaggle_synsets_parse(synsets, strlen(synsets), "s", &dk), 0);
	rc = kaggle_val_parse(text, strlen(text), "v", &dk);
	devkit_free(&dk);
	return rc;
}

Test(kaggle, bad_val_rows)
{
	/* a WNID not in the mapping */
	cr_assert_eq(val_rc("ILSVRC2012_val_00000001,n09999999 1 2 3 4\n"), -EINVAL);
	/* a gap: image 2 has no row */
	cr_assert_eq(val_rc("ILSVRC2012_val_00000001,n01440764 1\n"
			    "ILSVRC2012_val_00000003,n01440764 1\n"
			    "ILSVRC2012_val_00000004,n01440764 1\n"), -EINVAL);
	cr_assert_eq(val_rc("ILSVRC2012_val_00000000,n01440764 1\n"), -EINVAL);
	cr_assert_eq(val_rc("ILSVRC2012_val_00000001;n01440764 1\n"), -EINVAL);
	cr_assert_eq(val_rc("ILSVRC2012_val_00000001,n0144076\n"), -EINVAL);
	cr_assert_eq(val_rc("ImageId,PredictionString\n"), 0);	/* no rows: no labels */
}
