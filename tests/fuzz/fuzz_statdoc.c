/*
 * fuzz_statdoc.c - libFuzzer target for tools/stat/statdoc.c, the reader
 * samplefs-stat uses on stats.json (a file of the mount, so any bytes a
 * future or broken daemon writes).
 *
 * Feeds: the input is the document, no terminator.  Checks, for each key
 * samplefs-stat asks for: 0 or -1, *out untouched on -1; and a document
 * that wraps the input in a string value ({"x": "<input escaped>",
 * "read": 7}) reads "read" as 7: nothing inside a string is ever taken
 * for a key.
 * Seeds: tests/fuzz/seeds.py.
 */
#include "fuzz.h"
#include "../../tools/stat/statdoc.c"

static const char *const keys[] = { "uptime_s", "read", "errors", "waits",
				    "read_errors", "mem_hits" };

/* The input as a JSON string value, then a real "read": 7. */
static void wrapped(const uint8_t *data, size_t size)
{
	char *doc = malloc(size * 6 + 64);
	size_t n = 0, i;
	double v = -1;

	FUZZ_CHECK(doc);
	n += (size_t)sprintf(doc, "{\"x\": \"");
	for (i = 0; i < size; i++) {
		if (data[i] == '"' || data[i] == '\\')
			n += (size_t)sprintf(doc + n, "\\%c", data[i]);
		else if (data[i] < 0x20)
			n += (size_t)sprintf(doc + n, "\\u%04x", data[i]);
		else
			doc[n++] = (char)data[i];
	}
	n += (size_t)sprintf(doc + n, "\", \"read\": 7}");
	FUZZ_CHECK(statdoc_get(doc, n, "read", &v) == 0 && v == 7);
	free(doc);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *doc = (const char *)data;
	double v;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		v = 12345.5;
		rc = statdoc_get(doc, size, keys[i], &v);
		FUZZ_CHECK(rc == 0 || rc == -1);
		if (rc)
			FUZZ_CHECK(v == 12345.5);
	}
	if (size < 4096)
		wrapped(data, size);
	return 0;
}
