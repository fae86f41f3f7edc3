/*
 * test_bucket.c - the pure parts of bucket sources (core/io): a listing
 * page as Swift's s3api and GCS write it (entries, prefixes, stamps,
 * continuation), an <Error> body cut short, the credentials file's
 * profiles, and keys encoded by AWS's SigV4 rules.  Oracles: the values
 * written into the documents here, and the encodings AWS's documentation
 * gives ("UriEncode": space %20, '+' %2B, '=' %3D, UTF-8 bytes %XX, '/'
 * kept in a path and %2F in a query).  The requests themselves are tested
 * against Swift (tests/integration/test_s3.sh).
 */
#include <criterion/criterion.h>

#include "io/http/awscred.h"
#include "io/http/bucket.h"
#include "io/http/bucketlist.h"
#include "io/source.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct got {
	char names[8][64];
	int dir[8];
	struct source_stamp st[8];
	uint64_t gen[8];
	int n;
};

static int collect(void *arg, const struct bucketlist_entry *e)
{
	struct got *g = arg;

	cr_assert_lt(g->n, 8);
	snprintf(g->names[g->n], sizeof(g->names[0]), "%s", e->key);
	g->dir[g->n] = e->is_prefix;
	g->st[g->n] = e->stamp;
	g->gen[g->n] = e->generation;
	g->n++;
	return 0;
}

Test(bucketlist, s3_page)
{
	const char *x = "<?xml version='1.0' encoding='UTF-8'?>\n"
		"<ListBucketResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
		"<Name>b</Name><Prefix>qd/</Prefix><IsTruncated>true</IsTruncated>"
		"<NextContinuationToken>tok+/=</NextContinuationToken>"
		"<Contents><Key>qd/a b+\xc3\xa9=.npy</Key><LastModified>2026-12-02T09:01:47.250Z"
		"</LastModified><ETag>&quot;abc&quot;</ETag><Size>12345</Size>"
		"<Owner><ID>not-a-key</ID></Owner></Contents>"
		"<CommonPrefixes><Prefix>qd/sketchrnn/</Prefix></CommonPrefixes>"
		"</ListBucketResult>";
	struct bucketlist_page pg;
	struct got g = {0};

	cr_assert_eq(bucketlist_parse(x, strlen(x), collect, &g, &pg), 0);
	cr_assert_eq(g.n, 2);
	cr_expect_str_eq(g.names[0], "qd/a b+\xc3\xa9=.npy");
	cr_expect_eq(g.dir[0], 0);
	cr_expect_eq(g.st[0].size, 12345);
	cr_expect_str_eq(g.st[0].etag, "\"abc\"");
	cr_expect_eq(g.st[0].mtime_ns, 1796202107250000000ll);
	cr_expect_str_eq(g.names[1], "qd/sketchrnn/");
	cr_expect_eq(g.dir[1], 1);
	cr_expect(pg.truncated && !pg.is_error);
	cr_expect_str_eq(pg.next, "tok+/=");
	cr_expect_str_eq(pg.last_key, "qd/a b+\xc3\xa9=.npy");
	bucketlist_page_free(&pg);
}

Test(bucketlist, gcs_page_and_refusals)
{
	const char *x = "<ListBucketResult xmlns='http://doc.s3.amazonaws.com/2006-03-01'>"
		"<Name>quickdraw_dataset</Name><Marker>m</Marker><IsTruncated>false</IsTruncated>"
		"<Contents><Key>sketchrnn/cat.npz</Key><Generation>1522197893416108</Generation>"
		"<Size>7</Size><ETag>\"e\"</ETag></Contents></ListBucketResult>";
	const char *nosize = "<ListBucketResult><Contents><Key>k</Key></Contents></ListBucketResult>";
	const char *badsize = "<ListBucketResult><Contents><Key>k</Key><Size>1x</Size>"
			      "</Contents></ListBucketResult>";
	const char *doctype = "<!DOCTYPE x [<!ENTITY a \"b\">]><ListBucketResult/>";
	const char *cut = "<ListBucketResult><Contents><Key>k</Key><Size>1</Size></Contents>";
	struct bucketlist_page pg;
	struct got g = {0};

	cr_assert_eq(bucketlist_parse(x, strlen(x), collect, &g, &pg), 0);
	cr_assert_eq(g.n, 1);
	cr_expect_eq(g.gen[0], 1522197893416108ull);
	cr_expect(!pg.truncated && !pg.next);
	bucketlist_page_free(&pg);
	memset(&g, 0, sizeof(g));
	cr_expect_eq(bucketlist_parse(nosize, strlen(nosize), collect, &g, &pg), -EBADMSG);
	bucketlist_page_free(&pg);
	cr_expect_eq(bucketlist_parse(badsize, strlen(badsize), collect, &g, &pg), -EBADMSG);
	bucketlist_page_free(&pg);
	cr_expect_eq(bucketlist_parse(doctype, strlen(doctype), collect, &g, &pg), -EBADMSG);
	bucketlist_page_free(&pg);
	cr_expect_eq(bucketlist_parse(cut, strlen(cut), collect, &g, &pg), -EBADMSG);
	bucketlist_page_free(&pg);
	cr_expect_eq(g.n, 0, "a damaged page hands out nothing");
}

Test(bucketlist, error_cut_short)
{
	const char *x = "<?xml version='1.0' encoding='UTF-8'?>\n<Error><Code>"
		"SignatureDoesNotMatch</Code><Message>The request signature we "
		"calculated does not match</Message><StringToSign>AWS4-HMAC-SHA256\n2026";
	struct bucketlist_page pg;

	cr_assert_eq(bucketlist_error(x, strlen(x), &pg), 0);
	cr_expect_str_eq(pg.code, "SignatureDoesNotMatch");
	cr_expect_str_eq(pg.message, "The request signature we calculated does not match");
	bucketlist_page_free(&pg);
	cr_expect_eq(bucketlist_error("<html>", 6, &pg), -EBADMSG);
	bucketlist_page_free(&pg);
}

Test(bucketlist, times)
{
	cr_expect_eq(bucketlist_time("1970-01-01T00:00:01Z"), 1000000000ll);
	cr_expect_eq(bucketlist_time("2018-03-28T00:44:53.414Z"), 1522197893414000000ll);
	cr_expect_eq(bucketlist_time("2018-03-28T00:44:53+01:00"), 0);
	cr_expect_eq(bucketlist_time("yesterday"), 0);
}

Test(bucket, aws_encoding)
{
	char *p = bucket_encode("dir/a b+c=d~e_f-g.h/\xc3\xa9*", 1);
	char *q = bucket_encode("dir/a b", 0), *d;

	cr_expect_str_eq(p, "dir/a%20b%2Bc%3Dd~e_f-g.h/%C3%A9%2A");
	cr_expect_str_eq(q, "dir%2Fa%20b");
	d = bucket_decode(p);
	cr_expect_str_eq(d, "dir/a b+c=d~e_f-g.h/\xc3\xa9*");
	free(d);
	d = bucket_decode("100% a%2");
	cr_expect_str_eq(d, "100% a%2", "a '%' not followed by two hex digits stays");
	free(d);
	free(p);
	free(q);
}

Test(awscred, profiles)
{
	const char *f = "# comment\n[default]\naws_access_key_id = AK\n"
		"aws_secret_access_key = S1\n\n[ swift ]\r\n; note\r\n"
		"aws_access_key_id = test:tester\r\naws_secret_access_key=te=sting \r\n"
		"aws_session_token = T\n[half]\naws_access_key_id = x\n";
	struct awscred c;

	cr_assert_eq(awscred_parse(f, strlen(f), "default", &c), 0);
	cr_expect_str_eq(c.access_key, "AK");
	cr_expect_str_eq(c.secret, "S1");
	cr_expect_null(c.token);
	awscred_free(&c);
	cr_assert_eq(awscred_parse(f, strlen(f), "swift", &c), 0);
	cr_expect_str_eq(c.access_key, "test:tester");
	cr_expect_str_eq(c.secret, "te=sting");
	cr_expect_str_eq(c.token, "T");
	awscred_free(&c);
	cr_expect_eq(awscred_parse(f, strlen(f), "half", &c), -EINVAL);
	cr_expect_eq(awscred_parse(f, strlen(f), "nosuch", &c), -ENOENT);
	cr_expect_null(c.access_key);
}

Test(bucket, names_are_urls)
{
	char *j = source_join("s3://b/dir one/", "cr\xc3\xa8me x+y.npy");

	cr_expect(source_is_url("s3://b/k") && source_is_url("gs://b/"));
	cr_expect(!source_is_url("s3:/b/k") && !source_is_url("/s3://b"));
	/* a child's name percent-encoded, as for URLs: bucket.c decodes it */
	cr_expect_str_eq(j, "s3://b/dir one/cr%C3%A8me%20x%2By.npy");
	free(j);
}
