/*
 * zipmethod.c - the table of zip compression methods decoded whole (see
 * zipmethod.h): bzip2, LZMA, zstd, xz, a row per library, each a thin
 * step over its streaming API.  Nothing here bounds or checks output;
 * zipread.c does.
 *
 * Not for: deflate (io/codecs/zgzip.c inflates it, whole or in spans:
 * zsource_inflate_whole), random access (io/zsource.h), encryption.
 */
#include "formats/zipmethod.h"

#include <bzlib.h>
#include <errno.h>
#include <limits.h>
#include <lzma.h>
#include <stdlib.h>
#include <zstd.h>

/* Decoder memory for a member decoded whole (at most 4 MiB of output):
 * xz -9's 64 MiB dictionary fits, as does a zstd window of 64 MiB (the
 * zstd tool writes small inputs as one segment: their window is their
 * size); a header asking for more is refused as damage. */
#define WHOLE_MEM_MAX    ((uint64_t)96 << 20)
#define WHOLE_WINDOW_LOG 26

/* Libraries count in unsigned int: a step gives them at most this. */
#define STEP_MAX ((size_t)UINT_MAX)

static size_t cap(size_t n)
{
	return n < STEP_MAX ? n : STEP_MAX;
}

/* ---- bzip2 (12) ------------------------------------------------------ */

static int bzip2_open(void **st, const uint8_t *head, size_t n, uint64_t usize,
		       size_t *skip,
		      const char **why)
{
	bz_stream *bz = calloc(1, sizeof(*bz));

	(void)head, (void)n, (void)usize, (void)why;
	*skip = 0;
	if (!bz || BZ2_bzDecompressInit(bz, 0, 0) != BZ_OK) {
		free(bz);
		return -ENOMEM;
	}
	*st = bz;
	return 0;
}

static enum zstep bzip2_step(void *st, const uint8_t **in, size_t *inlen,
			     uint8_t **out, size_t *outlen, int last,
			     const char **why)
{
	bz_stream *bz = st;
	size_t ai = cap(*inlen), ao = cap(*outlen);
	int r;

	(void)last;
	bz->next_in = (char *)*in;
	bz->avail_in = (unsigned)ai;
	bz->next_out = (char *)*out;
	bz->avail_out = (unsigned)ao;
	r = BZ2_bzDecompress(bz);
	*in += ai - bz->avail_in;
	*inlen -= ai - bz->avail_in;
	*out += ao - bz->avail_out;
	*outlen -= ao - bz->avail_out;
	if (r == BZ_STREAM_END)
		return ZSTEP_END;
	if (r == BZ_OK)
		return ZSTEP_MORE;
	*why = "corrupt bzip2 stream";
	return ZSTEP_BAD;
}

static void bzip2_close(void *st)
{
	if (st)
		BZ2_bzDecompressEnd(st);
	free(st);
}

/* ---- LZMA (14) and xz (95): liblzma ---------------------------------- */

static enum zstep lzma_step(void *st, const uint8_t **in, size_t *inlen,
			    uint8_t **out, size_t *outlen, int last,
			    const char **why)
{
	lzma_stream *s = st;
	lzma_ret r;

	s->next_in = *in;
	s->avail_in = *inlen;
	s->next_out = *out;
	s->avail_out = *outlen;
	r = lzma_code(s, last ? LZMA_FINISH : LZMA_RUN);
	*in = s->next_in;
	*inlen = s->avail_in;
	*out = s->next_out;
	*outlen = s->avail_out;
	if (r == LZMA_STREAM_END)
		return ZSTEP_END;
	if (r == LZMA_OK || r == LZMA_BUF_ERROR)
		return ZSTEP_MORE;
	*why = r == LZMA_MEM_ERROR ? "out of memory" :
	       r == LZMA_MEMLIMIT_ERROR ? "needs more memory than allowed" :
	       "corrupt LZMA/xz stream";
	return ZSTEP_BAD;
}

static void lzma_close(void *st)
{
	if (st)
		lzma_end(st);
	free(st);
}

/*
 * Zip's LZMA: a 2-byte version, a 2-byte properties size (5), the LZMA1
 * properties, then the raw stream (APPNOTE 5.8.8), decoded by liblzma's
 * raw decoder.
 */
#define LZMA_ZIP_HEAD 4
static int lzma_zip_open(void **st, const uint8_t *head, size_t n, uint64_t usize,
		       size_t *skip,
			 const char **why)
{
	lzma_filter f[2] = { { .id = LZMA_FILTER_LZMA1 }, { .id = LZMA_VLI_UNKNOWN } };
	lzma_options_lzma *lz;
	lzma_stream *s;
	size_t plen;
	lzma_ret r;

	if (n < LZMA_ZIP_HEAD || (plen = (size_t)(head[2] | head[3] << 8)) > n - LZMA_ZIP_HEAD ||
	    lzma_properties_decode(&f[0], NULL, head + LZMA_ZIP_HEAD, plen) != LZMA_OK) {
		*why = "bad LZMA properties header";
		return -EBADMSG;
	}
	/* the dictionary need not outgrow the output: a header asking for
	 * 4 GiB is not taken at its word (liblzma allocates all of it) */
	lz = f[0].options;
	if (lz->dict_size > usize)
		lz->dict_size = usize < LZMA_DICT_SIZE_MIN ? LZMA_DICT_SIZE_MIN : (uint32_t)usize;
	if (!(s = calloc(1, sizeof(*s)))) {
		free(f[0].options);
		return -ENOMEM;
	}
	r = lzma_raw_decoder(s, f);
	free(f[0].options);
	if (r != LZMA_OK) {
		free(s);
		*why = "LZMA properties liblzma refuses";
		return r == LZMA_MEM_ERROR ? -ENOMEM : -EBADMSG;
	}
	*skip = LZMA_ZIP_HEAD + plen;
	*st = s;
	return 0;
}

static int xz_open(void **st, const uint8_t *head, size_t n, uint64_t usize,
		       size_t *skip,
		   const char **why)
{
	lzma_stream *s = calloc(1, sizeof(*s));

	(void)head, (void)n, (void)usize, (void)why;
	*skip = 0;
	if (!s || lzma_stream_decoder(s, WHOLE_MEM_MAX, LZMA_CONCATENATED) != LZMA_OK) {
		free(s);
		return -ENOMEM;
	}
	*st = s;
	return 0;
}

/* ---- zstd (93) ------------------------------------------------------- */

static int zstd_open(void **st, const uint8_t *head, size_t n, uint64_t usize,
		       size_t *skip,
		     const char **why)
{
	ZSTD_DStream *ds = ZSTD_createDStream();

	(void)head, (void)n, (void)usize, (void)why;
	*skip = 0;
	if (!ds)
		return -ENOMEM;
	ZSTD_DCtx_setParameter(ds, ZSTD_d_windowLogMax, WHOLE_WINDOW_LOG);
	*st = ds;
	return 0;
}

static enum zstep zstd_step(void *st, const uint8_t **in, size_t *inlen,
			    uint8_t **out, size_t *outlen, int last,
			    const char **why)
{
	ZSTD_inBuffer ib = { *in, *inlen, 0 };
	ZSTD_outBuffer ob = { *out, *outlen, 0 };
	size_t r = ZSTD_decompressStream(st, &ob, &ib);

	*in += ib.pos;
	*inlen -= ib.pos;
	*out += ob.pos;
	*outlen -= ob.pos;
	if (ZSTD_isError(r)) {
		*why = ZSTD_getErrorName(r);
		return ZSTEP_BAD;
	}
	/* 0: a frame ended and was flushed; the stream ends with the input */
	return r == 0 && last && *inlen == 0 ? ZSTEP_END : ZSTEP_MORE;
}

static void zstd_close(void *st)
{
	ZSTD_freeDStream(st);
}

static const struct zmethod methods[] = {
	{ 12, "bzip2", 0, bzip2_open, bzip2_step, bzip2_close },
	{ 14, "LZMA", 1, lzma_zip_open, lzma_step, lzma_close },
	{ 93, "zstd", 0, zstd_open, zstd_step, zstd_close },
	{ 95, "xz", 0, xz_open, lzma_step, lzma_close },
};

const struct zmethod *zmethod_find(uint16_t id)
{
	size_t i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (methods[i].id == id)
			return &methods[i];
	return NULL;
}
