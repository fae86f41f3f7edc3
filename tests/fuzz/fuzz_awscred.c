/*
 * fuzz_awscred.c - libFuzzer target for core/io/http/awscred.c's reading of an
 * AWS shared credentials file (~/.aws/credentials: ini sections, key
 * lines, comments), which a user or a tool writes.
 *
 * Feeds: the first byte picks the profile asked for ("default", "swift",
 * "a b", or a name taken from the input's second line); the rest is the
 * file's text.  Checks: the result is 0, -ENOENT, -EINVAL or -ENOMEM; on
 * 0 both keys are set, on anything else nothing is; values hold no line
 * break, do not start or end with a blank and are no longer than the
 * text; two parses agree.  Seeds: tests/fuzz/seeds.py.
 */
#include "fuzz.h"
#include "io/http/awscred.h"

static void value_ok(const char *v, size_t max)
{
	size_t n;

	if (!v)
		return;
	n = strlen(v);
	FUZZ_CHECK(n <= max && !strchr(v, '\n'));
	FUZZ_CHECK(!n || (v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' &&
			  v[n - 1] != '\t' && v[n - 1] != '\r'));
}

static int same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const names[] = { "default", "swift", "a b" };
	struct awscred a, b;
	const char *text;
	char profile[64] = "";
	size_t len;
	int ra, rb;

	if (size < 1)
		return 0;
	text = (const char *)data + 1;
	len = size - 1;
	if (data[0] % 4 < 3) {
		snprintf(profile, sizeof(profile), "%s", names[data[0] % 4]);
	} else {
		const char *nl = memchr(text, '\n', len), *nl2;

		if (nl && (nl2 = memchr(nl + 1, '\n', len - (size_t)(nl + 1 - text))) &&
		    (size_t)(nl2 - nl - 1) < sizeof(profile))
			memcpy(profile, nl + 1, (size_t)(nl2 - nl - 1));
		profile[strnlen(profile, sizeof(profile) - 1)] = '\0';
	}
	ra = awscred_parse(text, len, profile, &a);
	FUZZ_CHECK(ra == 0 || ra == -ENOENT || ra == -EINVAL || ra == -ENOMEM);
	if (ra == 0) {
		FUZZ_CHECK(a.access_key && a.secret);
	} else {
		FUZZ_CHECK(!a.access_key && !a.secret && !a.token);
	}
	value_ok(a.access_key, len);
	value_ok(a.secret, len);
	value_ok(a.token, len);
	rb = awscred_parse(text, len, profile, &b);
	FUZZ_CHECK(rb == ra && same(a.access_key, b.access_key) &&
		   same(a.secret, b.secret) && same(a.token, b.token));
	awscred_free(&a);
	awscred_free(&b);
	return 0;
}
