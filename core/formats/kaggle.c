/*
 * kaggle.c - Kaggle ImageNet's LOC_synset_mapping.txt and
 * LOC_val_solution.csv into a struct devkit (see kaggle.h).  Both are
 * small text files read whole; every line is checked before it is used.
 *
 * Not for: the boxes of LOC_val_solution.csv or LOC_train_solution.csv.
 */
#include "formats/kaggle.h"
#include "log.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define VAL_PREFIX "ILSVRC2012_val_"
#define VAL_MAX    10000000u   /* more val images than this: malformed */

/* The next line of buf at *pos: [*line, *line + *n), newline dropped. */
static int next_line(const char *buf, size_t len, size_t *pos, const char **line,
		     size_t *n)
{
	const char *nl;

	if (*pos >= len)
		return 0;
	*line = buf + *pos;
	nl = memchr(*line, '\n', len - *pos);
	*n = nl ? (size_t)(nl - *line) : len - *pos;
	*pos += *n + (nl != NULL);
	if (*n && (*line)[*n - 1] == '\r')
		(*n)--;
	return 1;
}

/* "n" and 8 digits */
static int is_wnid(const char *s, size_t n)
{
	size_t i;

	if (n != 9 || s[0] != 'n')
		return 0;
	for (i = 1; i < 9; i++)
		if (s[i] < '0' || s[i] > '9')
			return 0;
	return 1;
}

static int count_lines(const char *buf, size_t len)
{
	size_t pos = 0, n;
	const char *l;
	int k = 0;

	while (next_line(buf, len, &pos, &l, &n) && k < INT32_MAX)
		k += n > 0;
	return k;
}

int kaggle_synsets_parse(const char *buf, size_t len, const char *what,
			 struct devkit *dk)
{
	size_t pos = 0, n;
	const char *l;
	uint32_t max = (uint32_t)count_lines(buf, len), line = 0;

	dk->wnid = calloc(max ? max : 1, sizeof(*dk->wnid));
	dk->words = calloc(max ? max : 1, sizeof(*dk->words));
	if (!dk->wnid || !dk->words)
		return -ENOMEM;
	while (next_line(buf, len, &pos, &l, &n)) {
		line++;
		if (!n)
			continue;
		if (n < 9 || !is_wnid(l, 9) || (n > 9 && l[9] != ' ')) {
			sfs_err("%s: line %u: expected \"<wnid> <words>\"", what, line);
			return -EINVAL;
		}
		if (dk->nclasses && strncmp(dk->wnid[dk->nclasses - 1], l, 9) >= 0) {
			sfs_err("%s: line %u: WNID %.9s repeated or out of order", what,
				line, l);
			return -EINVAL;
		}
		memcpy(dk->wnid[dk->nclasses], l, 9);
		dk->words[dk->nclasses] = strndup(n > 10 ? l + 10 : "", n > 10 ? n - 10 : 0);
		if (!dk->words[dk->nclasses++])
			return -ENOMEM;
	}
	if (!dk->nclasses) {
		sfs_err("%s: no classes", what);
		return -EINVAL;
	}
	return 0;
}

/* "ILSVRC2012_val_00000001,n01751748 ..." -> image number, label */
static int val_row(const struct devkit *dk, const char *l, size_t n, uint32_t *img,
		   uint32_t *label)
{
	size_t p = sizeof(VAL_PREFIX) - 1;
	uint64_t k = 0;
	int64_t lab;
	char w[10];

	if (n < p + 1 || memcmp(l, VAL_PREFIX, p))
		return -1;
	for (; p < n && l[p] >= '0' && l[p] <= '9' && k <= VAL_MAX; p++)
		k = k * 10 + (uint64_t)(l[p] - '0');
	if (p >= n || l[p] != ',' || k == 0 || k > VAL_MAX || n - p - 1 < 9 ||
	    !is_wnid(l + p + 1, 9) || (n - p - 1 > 9 && l[p + 10] != ' '))
		return -1;
	memcpy(w, l + p + 1, 9);
	w[9] = '\0';
	lab = devkit_label(dk, w);
	if (lab < 0)
		return -2;
	*img = (uint32_t)k;
	*label = (uint32_t)lab;
	return 0;
}

int kaggle_val_parse(const char *buf, size_t len, const char *what,
		     struct devkit *dk)
{
	size_t pos = 0, n;
	const char *l;
	uint32_t line = 0, img, label, rows = (uint32_t)count_lines(buf, len), i;
	int r;

	dk->val_label = malloc(((size_t)rows + 1) * sizeof(uint32_t));
	if (!dk->val_label)
		return -ENOMEM;
	memset(dk->val_label, 0xff, ((size_t)rows + 1) * sizeof(uint32_t));
	while (next_line(buf, len, &pos, &l, &n)) {
		if (++line == 1 && n >= 7 && !memcmp(l, "ImageId", 7))
			continue;	/* the header */
		if (!n)
			continue;
		r = val_row(dk, l, n, &img, &label);
		if (r == 0 && img > rows)
			r = -1;		/* numbers past the row count: gaps */
		if (r < 0) {
			sfs_err("%s: line %u: %s", what, line, r == -2 ?
				"a WNID not in LOC_synset_mapping.txt" :
				"expected \"ILSVRC2012_val_<8 digits>,<wnid> ...\" "
				"numbered at most the row count");
			return -EINVAL;
		}
		dk->val_label[img - 1] = label;
		if (img > dk->nval)
			dk->nval = img;
	}
	for (i = 0; i < dk->nval; i++)
		if (dk->val_label[i] == UINT32_MAX) {
			sfs_err("%s: no row for " VAL_PREFIX "%08u", what, i + 1);
			return -EINVAL;
		}
	return 0;
}
