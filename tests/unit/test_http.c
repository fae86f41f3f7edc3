/*
 * test_http.c - the HTTP backend of core/io (http.c, httpreq.c,
 * diskcache.c, autoindex.c) against real servers: nginx from Debian,
 * started per test on a free loopback port with a configuration in a
 * temporary directory, and tests/unit/http_faults.py for the faults nginx
 * cannot make (Range ignored, 500s, 429, short bodies, a stall).
 *
 * Oracles: the served file's bytes as written to disk, the file's stat for
 * the stamp (nginx's ETag is "<mtime hex>-<size hex>"), readdir for
 * listings, and the servers' own logs for how many requests were sent.
 * Servers die with the test process (PR_SET_PDEATHSIG) and are killed by
 * PID in each test's fini.
 */
#include <criterion/criterion.h>

#include "io/http/autoindex.h"
#include "io/http/httpreq.h"
#include "io/source.h"
#include "capture.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BLK (32u << 10)	/* http_int.h's BLOCK, for boundaries */

static struct server {
	pid_t pid;
	int port;
	int tls;
	char dir[64];
	char url[128];		/* http://127.0.0.1:PORT */
} sv = { .pid = -1 };

static struct source_env *env;
static const char *fault_seconds = "1";	/* http_faults.py's Retry-After */

static char *path_in(const char *rel)
{
	char *p;

	cr_assert(asprintf(&p, "%s/%s", sv.dir, rel) > 0);
	return p;
}

static char *url_of(const char *rel)
{
	char *p;

	cr_assert(asprintf(&p, "%s/%s", sv.url, rel) > 0);
	return p;
}

/* A pattern no two offsets of one file share often: a 64-bit LCG per seed. */
static void fill(uint8_t *buf, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		buf[i] = (uint8_t)(x >> 56);
	}
}

static void write_file(const char *rel, size_t n, uint64_t seed)
{
	char *p = path_in(rel);
	uint8_t *buf = malloc(n + 1);
	FILE *f;

	cr_assert(buf);
	fill(buf, n, seed);
	cr_assert((f = fopen(p, "wb")), "%s: %s", p, strerror(errno));
	cr_assert_eq(fwrite(buf, 1, n, f), n);
	cr_assert_eq(fclose(f), 0);
	free(buf);
	free(p);
}

/* The file's bytes as on disk: the oracle. */
static uint8_t *read_back(const char *rel, size_t *n)
{
	char *p = path_in(rel);
	struct stat st;
	uint8_t *buf;
	int fd = open(p, O_RDONLY);

	cr_assert(fd >= 0 && !fstat(fd, &st));
	buf = malloc((size_t)st.st_size + 1);
	cr_assert(buf);
	cr_assert_eq(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	close(fd);
	free(p);
	*n = (size_t)st.st_size;
	return buf;
}

static void set_mtime(const char *rel, time_t t)
{
	char *p = path_in(rel);
	struct timeval tv[2] = { { t, 0 }, { t, 0 } };

	cr_assert_eq(utimes(p, tv), 0);
	free(p);
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), port;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(s >= 0 && !bind(s, (struct sockaddr *)&a, sizeof(a)) &&
		  !getsockname(s, (struct sockaddr *)&a, &len));
	port = ntohs(a.sin_port);
	close(s);
	return port;
}

static int accepts(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int s = socket(AF_INET, SOCK_STREAM, 0), ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(s);
	return ok;
}

/* fork + exec argv, dying with this process; stdout to out_fd when >= 0. */
static pid_t spawn(char *const argv[], int out_fd)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (out_fd >= 0)
			dup2(out_fd, 1);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static void make_dirs(void)
{
	char *p;

	strcpy(sv.dir, "/tmp/sfs-http-XXXXXX");
	cr_assert(mkdtemp(sv.dir));
	p = path_in("www");
	cr_assert_eq(mkdir(p, 0755), 0);
	free(p);
	p = path_in("tmp");
	cr_assert_eq(mkdir(p, 0755), 0);
	free(p);
}

static void write_conf(int port)
{
	char *p = path_in("nginx.conf");
	FILE *f = fopen(p, "w");
	const char *d = sv.dir;

	cr_assert(f);
	fprintf(f, "daemon off; master_process off; pid %s/nginx.pid;\n"
		"error_log %s/error.log;\nevents { worker_connections 256; }\n"
		"http {\n"
		"  log_format t '$request_method $uri \"$http_range\" $status $server_protocol $body_bytes_sent $connection';\n"
		"  access_log %s/access.log t;\n"
		"  client_body_temp_path %s/tmp; proxy_temp_path %s/tmp;\n"
		"  fastcgi_temp_path %s/tmp; uwsgi_temp_path %s/tmp; scgi_temp_path %s/tmp;\n"
		"  default_type application/octet-stream;\n"
		"  server {\n"
		"    listen 127.0.0.1:%d%s;\n", d, d, d, d, d, d, d, d, port,
		sv.tls ? " ssl http2" : "");
	if (sv.tls)
		fprintf(f, "    ssl_certificate %s/cert.pem; ssl_certificate_key %s/key.pem;\n",
			d, d);
	fprintf(f, "    root %s/www; autoindex on; autoindex_format json;\n"
		"    location /html/ { autoindex_format html; }\n"
		"    location /forbidden/ { deny all; }\n"
		"  }\n}\n", d);
	cr_assert_eq(fclose(f), 0);
	free(p);
}

static void make_cert(void)
{
	char *cmd;

	cr_assert(asprintf(&cmd, "openssl req -x509 -newkey rsa:2048 -nodes -days 2 "
			   "-subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 "
			   "-keyout %s/key.pem -out %s/cert.pem 2>/dev/null",
			   sv.dir, sv.dir) > 0);
	cr_assert_eq(system(cmd), 0, "openssl could not make a certificate");
	free(cmd);
}

/* Waits (bounded) until the server accepts; 0 if it died first. */
static int wait_ready(pid_t pid, int port)
{
	struct timespec ms10 = { 0, 10 * 1000000 };
	int i, status;

	for (i = 0; i < 1000; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return 0;
		if (accepts(port))
			return 1;
		nanosleep(&ms10, NULL);
	}
	return 0;
}

static void start_nginx(int tls)
{
	char *conf, *err;
	int attempt;

	sv.tls = tls;
	if (tls)
		make_cert();
	conf = path_in("nginx.conf");
	err = path_in("error.log");
	/* a free port can be taken before nginx binds it: try another */
	for (attempt = 0; attempt < 5; attempt++) {
		char *argv[] = { "/usr/sbin/nginx", "-c", conf, "-p", sv.dir, "-e", err, NULL };

		sv.port = free_port();
		write_conf(sv.port);
		sv.pid = spawn(argv, -1);
		if (wait_ready(sv.pid, sv.port))
			break;
		kill(sv.pid, SIGKILL);
		waitpid(sv.pid, NULL, 0);
		sv.pid = -1;
	}
	cr_assert(sv.pid > 0, "nginx did not start (see %s)", err);
	snprintf(sv.url, sizeof(sv.url), "%s://127.0.0.1:%d", tls ? "https" : "http",
		 sv.port);
	free(conf);
	free(err);
}

/* http_faults.py serving www/<rel> in `mode`. */
static void start_faults(const char *rel, const char *mode, const char *n)
{
	char *file = path_in(rel), *script, line[32];
	int fds[2];
	FILE *f;

	cr_assert(asprintf(&script, "%.*shttp_faults.py",
			   (int)(strrchr(__FILE__, '/') + 1 - __FILE__), __FILE__) > 0);
	cr_assert(access(script, R_OK) == 0, "%s: not found (run from the source tree)",
		  script);
	{
		char *argv[] = { "/usr/bin/python3", script, file, (char *)mode,
				 (char *)n, (char *)fault_seconds, NULL };

		cr_assert_eq(pipe(fds), 0);
		sv.pid = spawn(argv, fds[1]);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	cr_assert(f && fgets(line, sizeof(line), f), "http_faults.py did not start");
	fclose(f);
	sv.port = atoi(line);
	snprintf(sv.url, sizeof(sv.url), "http://127.0.0.1:%d", sv.port);
	free(file);
	free(script);
}

static void new_env(unsigned timeout, unsigned retries, uint64_t cache,
		    const char *cache_dir)
{
	struct source_config cfg = { .timeout_s = timeout, .retries = retries,
				     .cache_bytes = cache, .cache_dir = cache_dir };

	if (sv.tls) {
		static char ca[96];

		snprintf(ca, sizeof(ca), "%s/cert.pem", sv.dir);
		cfg.cacert = ca;
	}
	cr_assert_eq(source_env_new(&cfg, &env), 0);
}

static void setup(void)
{
	make_dirs();
}

static void teardown(void)
{
	char *cmd;

	source_nowait(0);
	source_env_free(env);
	env = NULL;
	fault_seconds = "1";
	if (sv.pid > 0) {
		kill(sv.pid, SIGKILL);
		waitpid(sv.pid, NULL, 0);
		sv.pid = -1;
	}
	if (sv.dir[0] && asprintf(&cmd, "rm -rf %s", sv.dir) > 0) {
		if (system(cmd)) {}
		free(cmd);
	}
}

TestSuite(http, .init = setup, .fini = teardown, .timeout = 60);

/*
 * nginx writes a request's log line once its last byte is sent, which can
 * be after the client has it.  nginx here is one process with one event
 * loop, so once it has answered a request sent now, every earlier line is
 * written.  The marker's own lines are not counted.
 */
#define MARKER "/.settle"

static void settle(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)sv.port) };
	const char req[] = "HEAD " MARKER " HTTP/1.0\r\n\r\n";
	char buf[512];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(fd >= 0 && !connect(fd, (struct sockaddr *)&a, sizeof(a)));
	cr_assert_eq(write(fd, req, sizeof(req) - 1), (ssize_t)sizeof(req) - 1);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
}

/* Lines of a log whose words match: nginx's "METHOD URI "RANGE" STATUS
 * PROTO" or http_faults.py's "METHOD RANGE STATUS".  A NULL word matches
 * anything; "!x" anything but x. */
static int count_log(const char *log, const char *w0, const char *w1,
		     const char *w2)
{
	char *p = path_in(log), line[512], *tok[3], *save;
	const char *want[3] = { w0, w1, w2 };
	FILE *f = fopen(p, "r");
	int n = 0, i, ok;

	free(p);
	if (!f)
		return 0;
	if (!strcmp(log, "access.log"))
		settle();
	while (fgets(line, sizeof(line), f)) {
		tok[0] = strtok_r(line, " \n", &save);
		tok[1] = strtok_r(NULL, " \n", &save);
		tok[2] = strtok_r(NULL, " \n", &save);
		if (tok[1] && !strcmp(tok[1], MARKER))
			continue;
		for (ok = 1, i = 0; i < 3 && ok; i++) {
			if (!want[i])
				continue;
			if (!tok[i])
				ok = 0;
			else if (want[i][0] == '!')
				ok = strcmp(tok[i], want[i] + 1) != 0;
			else
				ok = strcmp(tok[i], want[i]) == 0;
		}
		n += ok;
	}
	fclose(f);
	return n;
}

/* nginx's GETs of /rel other than the probe of byte 0 */
static int data_gets(const char *rel)
{
	char uri[256];

	snprintf(uri, sizeof(uri), "/%s", rel);
	return count_log("access.log", "GET", uri, "!\"bytes=0-0\"");
}

static int all_requests(void)
{
	return count_log("access.log", NULL, NULL, NULL);
}

/* Body bytes nginx sent for data GETs of /rel (the sixth word). */
static uint64_t bytes_sent(const char *rel)
{
	char *p = path_in("access.log"), line[512], uri[256], *w[7], *save;
	FILE *f = fopen(p, "r");
	uint64_t sum = 0;
	int i;

	cr_assert(f);
	settle();
	snprintf(uri, sizeof(uri), "/%s", rel);
	while (fgets(line, sizeof(line), f)) {
		for (i = 0; i < 7; i++)
			w[i] = strtok_r(i ? NULL : line, " \n", &save);
		if (w[5] && !strcmp(w[0], "GET") && !strcmp(w[1], uri) &&
		    strcmp(w[2], "\"bytes=0-0\""))
			sum += strtoull(w[5], NULL, 10);
	}
	fclose(f);
	free(p);
	return sum;
}

/* How many connections nginx's requests came on (its last word). */
static int connections(void)
{
	char *p = path_in("access.log"), line[512], *w;
	long seen[256];
	int n = 0, i;
	FILE *f = fopen(p, "r");

	cr_assert(f);
	settle();
	while (fgets(line, sizeof(line), f)) {
		if (strstr(line, " " MARKER " "))
			continue;
		cr_assert((w = strrchr(line, ' ')));
		for (i = 0; i < n && seen[i] != atol(w + 1); i++)
			;
		if (i == n && n < 256)
			seen[n++] = atol(w + 1);
	}
	fclose(f);
	free(p);
	return n;
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* n random reads of s checked against want (len bytes). */
static void random_reads(struct source *s, const uint8_t *want, size_t len,
			 int n, uint64_t seed, size_t max)
{
	uint8_t *got = malloc(max);
	uint64_t off;
	size_t k, expect;
	ssize_t r;
	int i;

	cr_assert(got);
	for (i = 0; i < n; i++) {
		/* half the reads straddle a block boundary */
		if (i % 2)
			off = (rnd(&seed) % (len / BLK + 1)) * BLK - rnd(&seed) % 4096;
		else
			off = rnd(&seed) % (len + 16);
		if (off > len + 16)
			off = 0;
		k = 1 + rnd(&seed) % max;
		expect = off >= len ? 0 : (len - off < k ? len - off : k);
		r = source_pread(s, got, k, off);
		cr_assert_eq(r, (ssize_t)expect, "read %zu at %llu: %zd, expected %zu",
			     k, (unsigned long long)off, r, expect);
		cr_assert(!memcmp(got, want + (expect ? off : 0), expect),
			  "read %zu at %llu: other bytes than the file's", k,
			  (unsigned long long)off);
	}
	free(got);
}

Test(http, stamp_and_random_reads)
{
	struct source *s;
	struct stat st;
	char etag[64], *p, *u;
	uint8_t *want;
	size_t len;
	int fd;
	uint64_t base;

	write_file("www/data.bin", 5 * BLK + 12345, 1);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("data.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/data.bin", &len);
	p = path_in("www/data.bin");
	cr_assert_eq(stat(p, &st), 0);
	snprintf(etag, sizeof(etag), "\"%llx-%llx\"", (unsigned long long)st.st_mtime,
		 (unsigned long long)st.st_size);
	cr_assert_eq(source_stamp(s)->size, (uint64_t)st.st_size);
	cr_assert_str_eq(source_stamp(s)->etag, etag);
	cr_assert_eq(source_stamp(s)->mtime_ns, (int64_t)st.st_mtime * 1000000000);
	cr_assert_eq(source_is_remote(s), 1);
	cr_assert_eq(source_fd(s, &fd, &base), -ENOTSUP);
	cr_assert_str_eq(source_name(s), u);
	random_reads(s, want, len, 400, 7, 3 * BLK);
	cr_assert_eq(source_check(s), 0);
	source_close(s);
	free(want);
	free(p);
	free(u);
}

Test(http, second_read_sends_no_request)
{
	struct source *s;
	uint8_t *want, *got;
	size_t len;
	int before;
	char *u;

	write_file("www/c.bin", 3 * BLK + 5, 2);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("c.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	/* nginx says Accept-Ranges: opening sends one HEAD and no GET */
	cr_assert_eq(count_log("access.log", "HEAD", NULL, NULL), 1);
	cr_assert_eq(count_log("access.log", "GET", NULL, NULL), 0);
	want = read_back("www/c.bin", &len);
	got = malloc(len);
	/* one read of the whole file: its missing blocks in one range */
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len));
	cr_assert_eq(data_gets("c.bin"), 1);
	/* the probe at open and the read: one connection, kept alive */
	cr_assert_eq(connections(), 1);
	before = all_requests();
	random_reads(s, want, len, 200, 3, BLK);
	cr_assert_eq(all_requests(), before, "reads of cached blocks sent requests");
	/* no-wait mode: served from memory, no request */
	source_nowait(1);
	cr_assert_eq(source_pread(s, got, 1000, BLK - 10), 1000);
	cr_assert(!memcmp(got, want + BLK - 10, 1000));
	source_nowait(0);
	cr_assert_eq(all_requests(), before);
	source_close(s);
	free(want);
	free(got);
	free(u);
}

/* Opens u (www/REL) and reads it whole: its bytes must be want's, from the
 * caches (no data GET of REL); `why` says what a GET would mean. */
static struct source *open_read_cached(const char *u, const char *rel,
				       const uint8_t *want, uint8_t *got, size_t len,
				       const char *why)
{
	struct source *s;
	int before;

	cr_assert_eq(source_open(env, u, &s), 0);
	before = data_gets(rel);
	memset(got, 0, len);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len));
	cr_assert_eq(data_gets(rel), before, "%s", why);
	return s;
}

/* A source reopened after hundreds of others (the table of known sources
 * grown several times) gets its id back, so its cached blocks are found. */
Test(http, reopened_source_keeps_its_cache_among_many)
{
	struct source *s;
	uint8_t *want, *got;
	char name[32], *u, *v;
	size_t len;
	int i;

	write_file("www/c.bin", 2 * BLK, 3);
	u = path_in("www/m");
	cr_assert(mkdir(u, 0755) == 0 || errno == EEXIST, "%s: %s", u, strerror(errno));
	free(u);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "www/m/%03d.bin", i);
		write_file(name, 100, (uint64_t)i);
	}
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("c.bin");
	want = read_back("www/c.bin", &len);
	got = malloc(len);
	cr_assert_eq(source_open(env, u, &s), 0);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	source_close(s);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "m/%03d.bin", i);
		v = url_of(name);
		cr_assert_eq(source_open(env, v, &s), 0, "%s", v);
		source_close(s);
		free(v);
	}
	s = open_read_cached(u, "c.bin", want, got, len,
			     "the reopened source's blocks were fetched again");
	source_close(s);
	free(want);
	free(got);
	free(u);
}

/* A source larger than the memory cache, read at random: a small read
 * alone in its 1 MiB region fetches only its bytes and keeps none; one
 * coming back to a region fetches (and keeps) its block. */
/* serve(NAME, SEED, CACHE, ...): www/NAME of 4 MiB served by nginx, opened
 * in a new mount env with a memory cache of CACHE bytes; its bytes in
 * *want (*len), its URL in *u. */
static struct source *serve(const char *name, uint64_t seed, uint64_t cache,
			    uint8_t **want, size_t *len, char **u)
{
	char rel[64];
	struct source *s;

	snprintf(rel, sizeof(rel), "www/%s", name);
	write_file(rel, 4u << 20, seed);
	start_nginx(0);
	new_env(5, 2, cache, NULL);
	*u = url_of(name);
	cr_assert_eq(source_open(env, *u, &s), 0);
	*want = read_back(rel, len);
	return s;
}

Test(http, scattered_small_reads_fetch_only_their_bytes)
{
	struct source *s;
	uint8_t *want, got[4096];
	size_t len;
	char *u;

	s = serve("big.bin", 9, 256u << 10, &want, &len, &u);
	cr_assert_eq(source_pread(s, got, 3000, 100000), 3000);
	cr_assert(!memcmp(got, want + 100000, 3000));
	cr_assert_eq(source_pread(s, got, 3000, (2u << 20) + 777), 3000);
	cr_assert(!memcmp(got, want + (2u << 20) + 777, 3000));
	cr_assert_eq(data_gets("big.bin"), 2);
	cr_assert_eq(bytes_sent("big.bin"), 6000, "more than the bytes read");
	/* nothing kept */
	source_nowait(1);
	cr_assert_eq(source_pread(s, got, 100, 100000), -EAGAIN);
	source_nowait(0);
	/* region 0 again: its block, kept */
	cr_assert_eq(source_pread(s, got, 500, 3 * BLK + 100), 500);
	cr_assert(!memcmp(got, want + 3 * BLK + 100, 500));
	cr_assert_eq(bytes_sent("big.bin"), 6000 + BLK);
	source_nowait(1);
	cr_assert_eq(source_pread(s, got, 1000, 3 * BLK + 2000), 1000);
	cr_assert(!memcmp(got, want + 3 * BLK + 2000, 1000));
	source_nowait(0);
	random_reads(s, want, len, 300, 11, 2 * BLK);
	source_close(s);
	free(want);
	free(u);
}

/* source_advise(WILLNEED) fetches the range in the background, one GET of
 * its blocks; the reader then finds them in memory. */
Test(http, willneed_prefetches_in_the_background)
{
	struct source *s;
	uint8_t *want, got[4096];
	size_t len;
	char *u;
	int i;

	s = serve("next.bin", 21, 8u << 20, &want, &len, &u);
	source_advise(s, (1u << 20) + 5, 256u << 10, SOURCE_ADV_WILLNEED);
	source_nowait(1);
	for (i = 0; i < 500 && source_pread(s, got, 3000, (1u << 20) + 5) == -EAGAIN; i++)
		usleep(10000);
	cr_assert_lt(i, 500, "the hinted bytes never landed");
	cr_assert(!memcmp(got, want + (1u << 20) + 5, 3000));
	/* its last block landed too, and nothing past it */
	cr_assert_eq(source_pread(s, got, 100, (1u << 20) + (256u << 10)), 100);
	cr_assert(!memcmp(got, want + (1u << 20) + (256u << 10), 100));
	cr_assert_eq(source_pread(s, got, 100, (1u << 20) + 9 * BLK), -EAGAIN);
	cr_assert_eq(source_pread(s, got, 100, 0), -EAGAIN);
	source_nowait(0);
	cr_assert_eq(data_gets("next.bin"), 1);
	cr_assert_eq(bytes_sent("next.bin"), 9 * BLK, "blocks 32..40 in one GET");
	/* past the end and of nothing: no request */
	source_advise(s, len, 4096, SOURCE_ADV_WILLNEED);
	source_advise(s, 0, 0, SOURCE_ADV_WILLNEED);
	source_close(s);
	cr_assert_eq(data_gets("next.bin"), 1);
	free(want);
	free(u);
}

/* A hint of SOURCE_WILLNEED_SPAN bytes (members next to each other, which
 * a layout joins up to it), wherever it starts, is one GET of the blocks
 * around it, its last byte included: a hint cut short of it would leave
 * the last member's end to a GET of its reader. */
Test(http, willneed_span_is_one_get)
{
	const uint64_t off = (1u << 20) + 5, end = off + SOURCE_WILLNEED_SPAN;
	struct source *s;
	uint8_t *want, got[4096];
	size_t len;
	char *u;
	int i;

	s = serve("span.bin", 22, 8u << 20, &want, &len, &u);
	source_advise(s, off, SOURCE_WILLNEED_SPAN, SOURCE_ADV_WILLNEED);
	source_nowait(1);
	for (i = 0; i < 500 && source_pread(s, got, 100, end - 100) == -EAGAIN; i++)
		usleep(10000);
	cr_assert_lt(i, 500, "the hint's last bytes never landed");
	cr_assert(!memcmp(got, want + end - 100, 100));
	cr_assert_eq(source_pread(s, got, 3000, off), 3000);
	cr_assert(!memcmp(got, want + off, 3000));
	cr_assert_eq(source_pread(s, got, 100, (end / BLK + 1) * BLK), -EAGAIN,
		     "nothing past the hint's blocks");
	source_nowait(0);
	cr_assert_eq(data_gets("span.bin"), 1);
	cr_assert_eq(bytes_sent("span.bin"), (end / BLK + 1) * BLK - (off / BLK) * BLK);
	source_close(s);
	free(want);
	free(u);
}

Test(http, nowait_misses_give_eagain)
{
	struct source *s;
	uint8_t *want, got[4096];
	size_t len;
	char *u;
	int before;

	write_file("www/n.bin", 4 * BLK, 3);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("n.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/n.bin", &len);
	before = all_requests();
	source_nowait(1);
	cr_assert_eq(source_pread(s, got, sizeof(got), 2 * BLK), -EAGAIN);
	source_nowait(0);
	cr_assert_eq(all_requests(), before, "a no-wait read sent a request");
	cr_assert_eq(source_pread(s, got, sizeof(got), 2 * BLK), (ssize_t)sizeof(got));
	cr_assert(!memcmp(got, want + 2 * BLK, sizeof(got)));
	source_nowait(1);
	/* a read across into a block not fetched still misses */
	cr_assert_eq(source_pread(s, got, sizeof(got), 3 * BLK - 100), -EAGAIN);
	cr_assert_eq(source_pread(s, got, 100, 3 * BLK - 100), 100);
	source_nowait(0);
	source_close(s);
	free(want);
	free(u);
}

Test(http, sequential_reads_are_read_ahead)
{
	struct source *s;
	uint8_t *want, *got;
	size_t len, off, k = 64 << 10;
	uint64_t sent;
	char *u;
	int gets;

	write_file("www/seq.bin", 40 * BLK + 77, 4);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("seq.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/seq.bin", &len);
	got = malloc(k);
	for (off = 0; off < len; off += k) {
		size_t e = len - off < k ? len - off : k;

		cr_assert_eq(source_pread(s, got, k, off), (ssize_t)e);
		cr_assert(!memcmp(got, want + off, e), "bytes at %zu", off);
	}
	gets = data_gets("seq.bin");
	/* block by block would be 41 requests; readahead doubles to 32 */
	cr_assert(gets >= 2 && gets <= 8, "%d requests for 41 blocks read in order", gets);
	sent = bytes_sent("seq.bin");
	cr_assert_eq(sent, len, "%llu bytes sent for a file of %zu read once in order",
		     (unsigned long long)sent, len);
	/* the reader's requests and at most two prefetches at a time, each
	 * on a kept-alive connection */
	cr_assert(connections() <= 3 && connections() < all_requests(),
		  "%d connections for %d requests", connections(), all_requests());
	source_close(s);
	source_env_free(env);

	/* in a cache of 32 blocks, what is read ahead and prefetched is still
	 * there when read */
	new_env(5, 2, 32 * (BLK + 256), NULL);
	cr_assert_eq(source_open(env, u, &s), 0);
	for (off = 0; off < len; off += k) {
		size_t e = len - off < k ? len - off : k;

		cr_assert_eq(source_pread(s, got, k, off), (ssize_t)e);
		cr_assert(!memcmp(got, want + off, e), "bytes at %zu", off);
	}
	cr_assert(data_gets("seq.bin") - gets <= 41 / 2, "%d requests for 41 blocks "
		  "with a small cache", data_gets("seq.bin") - gets);
	cr_assert_eq(bytes_sent("seq.bin") - sent, len, "%llu bytes sent for a file of "
		     "%zu read in order", (unsigned long long)(bytes_sent("seq.bin") - sent),
		     len);
	source_close(s);

	/* closed halfway, with prefetches queued or running: they are
	 * dropped or waited for, and the next source of the mount reads right */
	cr_assert_eq(source_open(env, u, &s), 0);
	for (off = 0; off < len / 2; off += k)
		cr_assert_eq(source_pread(s, got, k, off), (ssize_t)k);
	source_close(s);
	cr_assert_eq(source_open(env, u, &s), 0);
	random_reads(s, want, len, 50, 5, 2 * BLK);
	source_close(s);
	free(want);
	free(got);
	free(u);
}

Test(http, disk_cache_survives_remount_and_changes)
{
	struct source *s;
	uint8_t *want, *got;
	size_t len;
	char *u, *cache = path_in("cache");
	int before;

	write_file("www/d.bin", 6 * BLK + 99, 5);
	set_mtime("www/d.bin", 1500000000);
	start_nginx(0);
	u = url_of("d.bin");
	new_env(5, 2, 0, cache);
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/d.bin", &len);
	got = malloc(len);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	source_close(s);
	source_env_free(env);
	env = NULL;

	/* a new mount: the blocks come from the disk */
	new_env(5, 2, 0, cache);
	s = open_read_cached(u, "d.bin", want, got, len, "blocks on disk were fetched again");
	random_reads(s, want, len, 100, 11, 2 * BLK);
	source_close(s);
	source_env_free(env);
	env = NULL;
	free(want);

	/* the file changes (same size, another mtime: another ETag): the old
	 * blocks on disk must not be served */
	write_file("www/d.bin", 6 * BLK + 99, 6);
	set_mtime("www/d.bin", 1600000000);
	want = read_back("www/d.bin", &len);
	new_env(5, 2, 0, cache);
	cr_assert_eq(source_open(env, u, &s), 0);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len), "served blocks of the old version");
	cr_assert(data_gets("d.bin") > before);
	source_close(s);
	free(want);
	free(got);
	free(u);
	free(cache);
}

/* Files in the cache directory and their total size. */
static uint64_t dir_bytes(const char *dir, int *files)
{
	char *cmd, line[64];
	unsigned long long b = 0;
	FILE *p;

	cr_assert(asprintf(&cmd, "find %s -type f -printf '%%s\\n' | awk '{s+=$1; n++} "
			   "END {print s+0, n+0}'", dir) > 0);
	p = popen(cmd, "r");
	cr_assert(p && fgets(line, sizeof(line), p));
	pclose(p);
	free(cmd);
	cr_assert_eq(sscanf(line, "%llu %d", &b, files), 2);
	return b;
}

Test(http, disk_cache_is_bounded)
{
	struct source *s;
	uint8_t *want, *got;
	size_t len;
	char *u, *cache = path_in("cache");
	int files;
	uint64_t bound = 4 * BLK + 4096;

	write_file("www/b.bin", 16 * BLK, 7);
	start_nginx(0);
	u = url_of("b.bin");
	{
		struct source_config cfg = { .timeout_s = 5, .retries = 2,
					     .cache_dir = cache, .cache_dir_bytes = bound };

		cr_assert_eq(source_env_new(&cfg, &env), 0);
	}
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/b.bin", &len);
	got = malloc(len);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len));
	cr_assert(dir_bytes(cache, &files) <= bound, "cache_dir holds more than its bound");
	cr_assert(files >= 1);
	source_close(s);
	free(want);
	free(got);
	free(u);
	free(cache);
}

/* ... and the change holds for every source of the URL in the mount,
 * cached bytes included: one opened before, which shares the cached
 * blocks (on main it read the old bytes from them), and one opened after,
 * whose HEAD shows the new stamp. */
Test(http, changed_source_gives_eio_and_one_warning)
{
	struct source *s, *before, *after;
	struct capture c;
	uint8_t got[1000];
	char *u, *text, *p;
	int n = 0;

	write_file("www/ch.bin", 4 * BLK, 8);
	set_mtime("www/ch.bin", 1500000000);
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("ch.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	cr_assert_eq(source_open(env, u, &before), 0);
	cr_assert_eq(source_pread(s, got, sizeof(got), 0), (ssize_t)sizeof(got));
	write_file("www/ch.bin", 4 * BLK, 9);
	set_mtime("www/ch.bin", 1600000000);
	capture_start(&c);
	cr_assert_eq(source_pread(s, got, sizeof(got), 3 * BLK), -EIO);
	cr_assert_eq(source_check(s), -EIO);
	/* once changed, cached bytes are not served either */
	cr_assert_eq(source_pread(s, got, sizeof(got), 0), -EIO);
	cr_assert_eq(source_pread(s, got, sizeof(got), 2 * BLK), -EIO);
	text = capture_end(&c);
	cr_assert(strstr(text, u) && strstr(text, "ETag"), "%s", text);
	for (p = text; (p = strstr(p, "changed since mounting")); p++)
		n++;
	cr_assert_eq(n, 1, "the change warned %d times: %s", n, text);
	free(text);
	cr_assert_eq(source_pread(before, got, sizeof(got), 0), -EIO,
		     "another source of the URL served the old bytes from the cache");
	cr_assert_eq(source_check(before), -EIO);
	cr_assert_eq(source_open(env, u, &after), 0);
	cr_assert_eq(source_pread(after, got, sizeof(got), 0), -EIO,
		     "a source opened after the change read");
	source_close(after);
	source_close(before);
	source_close(s);
	free(u);
}

Test(http, missing_forbidden_and_names)
{
	struct source *s;
	struct source_info info;
	struct capture c;
	uint8_t *want, got[64];
	size_t len;
	char *u, *text, *d;
	const char *odd = "a b+c%25 \xc3\xa9.bin";

	write_file("www/a b+c%25 \xc3\xa9.bin", 60, 10);
	d = path_in("www/forbidden");
	cr_assert_eq(mkdir(d, 0755), 0);
	free(d);
	write_file("www/forbidden/f.bin", 10, 11);
	start_nginx(0);
	new_env(5, 2, 0, NULL);

	u = url_of("nothere.bin");
	capture_start(&c);
	cr_assert_eq(source_open(env, u, &s), -ENOENT);
	text = capture_end(&c);
	cr_assert(strstr(text, u) && strstr(text, "404"), "%s", text);
	free(text);
	cr_assert_eq(source_stat(env, u, &info), -ENOENT);
	free(u);

	u = url_of("forbidden/f.bin");
	capture_start(&c);
	cr_assert_eq(source_open(env, u, &s), -EACCES);
	text = capture_end(&c);
	cr_assert(strstr(text, u) && strstr(text, "403"), "%s", text);
	free(text);
	free(u);

	/* a name that needs percent-encoding, joined as layouts do */
	u = source_join(sv.url, odd);
	cr_assert(u && strstr(u, "%20") && strstr(u, "%2525"), "%s", u);
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/a b+c%25 \xc3\xa9.bin", &len);
	cr_assert_eq(source_pread(s, got, sizeof(got), 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len));
	source_close(s);
	cr_assert_eq(source_stat(env, u, &info), 0);
	cr_assert_eq(info.is_dir, 0);
	cr_assert_eq(info.stamp.size, len);
	free(want);
	free(u);
}

struct names {
	char *v[64];
	int dir[64];
	int n;
};

static int collect(void *arg, const char *name, int is_dir)
{
	struct names *ns = arg;

	cr_assert(ns->n < 64);
	ns->dir[ns->n] = is_dir;
	ns->v[ns->n++] = strdup(name);
	return 0;
}

static void forget(struct names *ns)
{
	while (ns->n)
		free(ns->v[--ns->n]);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

Test(http, listings_and_stat_of_directories)
{
	const char *names[] = { "plain.npy", "with space.npy", "q\"uo\\te.npy",
				"\xc3\xa9t\xc3\xa9.npy", "sub" };
	struct source_info info;
	struct names got = { 0 };
	struct capture c;
	struct dirent *de;
	char *want[64], *d, *u, *text;
	int nwant = 0, i;
	DIR *dir;

	for (i = 0; i < 4; i++) {
		char *rel;

		cr_assert(asprintf(&rel, "www/list/%s", names[i]) > 0);
		if (i == 0) {
			d = path_in("www/list");
			cr_assert_eq(mkdir(d, 0755), 0);
			free(d);
			d = path_in("www/list/sub");
			cr_assert_eq(mkdir(d, 0755), 0);
			free(d);
			d = path_in("www/html");
			cr_assert_eq(mkdir(d, 0755), 0);
			free(d);
		}
		write_file(rel, 10, (uint64_t)i);
		free(rel);
	}
	start_nginx(0);
	new_env(5, 2, 0, NULL);
	u = url_of("list/");
	cr_assert_eq(source_list(env, u, collect, &got), 0);
	/* the oracle: readdir of the served directory */
	d = path_in("www/list");
	cr_assert((dir = opendir(d)));
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			want[nwant++] = strdup(de->d_name);
	closedir(dir);
	free(d);
	cr_assert_eq(got.n, nwant);
	for (i = 0; i < got.n; i++)
		cr_assert_eq(got.dir[i], !strcmp(got.v[i], "sub"), "%s", got.v[i]);
	qsort(got.v, (size_t)got.n, sizeof(char *), by_name);
	qsort(want, (size_t)nwant, sizeof(char *), by_name);
	for (i = 0; i < nwant; i++) {
		cr_assert_str_eq(got.v[i], want[i]);
		free(want[i]);
	}
	free(u);

	/* without the trailing slash too; stat says directory either way */
	u = url_of("list");
	forget(&got);
	cr_assert_eq(source_list(env, u, collect, &got), 0);
	cr_assert_eq(got.n, nwant);
	forget(&got);
	cr_assert_eq(source_stat(env, u, &info), 0);
	cr_assert_eq(info.is_dir, 1);
	free(u);
	u = url_of("list/sub/");
	cr_assert_eq(source_stat(env, u, &info), 0);
	cr_assert_eq(info.is_dir, 1);
	free(u);
	u = url_of("list/nothere/");
	cr_assert_eq(source_list(env, u, collect, &got), -ENOENT);
	free(u);
	/* an HTML index is no listing */
	u = url_of("html/");
	capture_start(&c);
	cr_assert_eq(source_list(env, u, collect, &got), -ENOTSUP);
	text = capture_end(&c);
	cr_assert(strstr(text, u) && strstr(text, "not a JSON directory listing"), "%s", text);
	free(text);
	free(u);
	{
		struct source *s;

		u = url_of("list/sub/");
		cr_assert_eq(source_open(env, u, &s), -EISDIR);
		free(u);
		u = url_of("list/sub");	/* nginx redirects to list/sub/ */
		cr_assert_eq(source_open(env, u, &s), -EISDIR);
		free(u);
	}
}

static int stop_at_two(void *arg, const char *name, int is_dir)
{
	int *n = arg;

	(void)name;
	(void)is_dir;
	return ++*n == 2 ? 42 : 0;
}

Test(http, autoindex_parser)
{
	const char *ok = " [ {\"name\":\"a\\\"b\\\\c\\u0041\\td\",\"type\":\"file\",\"size\":3,\"p\":\"\\/\","
			 "\"x\":[1,-2.5e3,{\"y\":null}],\"t\":true},\n"
			 "{\"type\":\"directory\",\"name\":\"\\u00e9\\ud83d\\ude00\"},"
			 "{\"name\":\"..\",\"type\":\"directory\"},"
			 "{\"name\":\"x/y\",\"type\":\"file\"},"
			 "{\"name\":\"nul\\u0000\",\"type\":\"file\"},"
			 "{\"name\":\"link\",\"type\":\"other\"},{}] ";
	const char *bad[] = {
		"", "{}", "[", "[{\"name\":\"a\",\"type\":\"file\"}", "[]x",
		"[{\"name\":\"a\"\"type\":\"file\"}]", "[{\"name\":\"a\\q\"}]",
		"[{\"name\":\"\\ud800\"}]", "[{\"name\":\"\\udc00x\"}]",
		"[{\"name\":\"a\\u12\"}]", "[{\"name\":\"a\x01\"}]", "[{\"n\":tru}]",
		"[{\"n\":-}]", "[{\"name\":\"abc\\\"]", "<html><body>Index of /</body></html>",
		"[{\"name\":\"a\",}]",
	};
	struct names got = { 0 };
	char deep[300];
	size_t i;
	int n = 0;

	cr_assert_eq(autoindex_parse(ok, strlen(ok), collect, &got), 0);
	cr_assert_eq(got.n, 2);
	cr_assert_str_eq(got.v[0], "a\"b\\cA\td");
	cr_assert_eq(got.dir[0], 0);
	cr_assert_str_eq(got.v[1], "\xc3\xa9\xf0\x9f\x98\x80");
	cr_assert_eq(got.dir[1], 1);
	forget(&got);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(autoindex_parse(bad[i], strlen(bad[i]), collect, &got),
			     -ENOTSUP, "accepted: %s", bad[i]);
	/* not even the good entries before the damage */
	cr_assert_eq(got.n, 0);
	/* nesting deeper than any listing's is refused, not recursed into */
	memset(deep, '[', sizeof(deep));
	cr_assert_eq(autoindex_parse(deep, sizeof(deep), collect, &got), -ENOTSUP);
	memcpy(deep, "[{\"x\":", 6);
	cr_assert_eq(autoindex_parse(deep, sizeof(deep), collect, &got), -ENOTSUP);
	/* the callback's value stops the listing */
	{
		const char *three = "[{\"name\":\"a\",\"type\":\"file\"},{\"name\":\"b\","
				     "\"type\":\"file\"},{\"name\":\"c\",\"type\":\"file\"}]";

		cr_assert_eq(autoindex_parse(three, strlen(three), stop_at_two, &n), 42);
	}
	cr_assert_eq(n, 2);
}

/* ---- faults, from http_faults.py ---- */

/* www/<rel> (size bytes) served by http_faults.py in `mode`, with a mount's
 * settings; its URL in *url. */
static void faulty(const char *rel, size_t size, uint64_t seed, const char *mode,
		   const char *n, unsigned timeout, unsigned retries, char **url)
{
	char *file;

	cr_assert(asprintf(&file, "www/%s", rel) > 0);
	write_file(file, size, seed);
	start_faults(file, mode, n);
	new_env(timeout, retries, 0, NULL);
	*url = url_of(rel);
	free(file);
}

/* The whole of www/<rel> read through s, compared with the file. */
static void read_whole(struct source *s, const char *rel)
{
	char *file;
	uint8_t *want, *got;
	size_t len;

	cr_assert(asprintf(&file, "www/%s", rel) > 0);
	want = read_back(file, &len);
	got = malloc(len + 1);
	cr_assert_eq(source_pread(s, got, len + 1, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len), "%s: other bytes than the file's", rel);
	free(want);
	free(got);
	free(file);
}

/* What was said while opening u failed with rc (malloc'ed). */
static char *open_fails(const char *u, int rc)
{
	struct source *s = NULL;
	struct capture c;

	capture_start(&c);
	cr_assert_eq(source_open(env, u, &s), rc);
	return capture_end(&c);
}

/* What was said while a read of n bytes at off failed with EIO. */
static char *read_fails(struct source *s, size_t n, uint64_t off)
{
	uint8_t *got = malloc(n);
	struct capture c;

	capture_start(&c);
	cr_assert_eq(source_pread(s, got, n, off), -EIO);
	free(got);
	return capture_end(&c);
}

/* The log of http_faults.py serving www/<rel> (words as count_log's). */
static int fault_log(const char *rel, const char *method, const char *range,
		     const char *status)
{
	char log[128];

	snprintf(log, sizeof(log), "www/%s.log", rel);
	return count_log(log, method, range, status);
}

Test(http, server_ignoring_range_is_refused)
{
	char *u, *text;

	faulty("r.bin", 3 * BLK, 12, "norange", "0", 5, 2, &u);
	text = open_fails(u, -EIO);
	cr_assert(strstr(text, u) && strstr(text, "ignores Range"), "%s", text);
	free(text);
	free(u);
}

Test(http, server_saying_it_serves_ranges_and_not_gives_eio)
{
	struct source *s;
	char *u, *text, range[64];

	faulty("l.bin", 3 * BLK, 21, "liar", "0", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);	/* HEAD believed */
	text = read_fails(s, 100, BLK);
	snprintf(range, sizeof(range), "bytes %u-%u", BLK, 2 * BLK - 1);	/* block 1 */
	cr_assert(strstr(text, u) && strstr(text, "ignores Range") &&
		  strstr(text, range), "%s", text);
	cr_assert_eq(fault_log("l.bin", NULL, NULL, "200"), 2, "the HEAD and one GET");
	free(text);
	source_close(s);
	free(u);
}

Test(http, errors_are_retried)
{
	struct source *s;
	char *u;

	faulty("e.bin", 3 * BLK + 1, 13, "fail500", "2", 5, 3, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	cr_assert_eq(fault_log("e.bin", "HEAD", NULL, "500"), 2);
	read_whole(s, "e.bin");
	source_close(s);
	free(u);
}

Test(http, errors_beyond_the_retries_give_eio)
{
	char *u, *text;

	faulty("e.bin", 100, 14, "fail500", "100", 5, 2, &u);
	text = open_fails(u, -EIO);
	cr_assert(strstr(text, u) && strstr(text, "HTTP 500") &&
		  strstr(text, "3 attempts"), "%s", text);
	cr_assert_eq(fault_log("e.bin", "HEAD", NULL, "500"), 3);
	free(text);
	free(u);
}

Test(http, too_many_requests_waits_and_retries)
{
	struct source *s;
	char *u;

	faulty("t.bin", 100, 15, "r429", "1", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	read_whole(s, "t.bin");
	cr_assert_eq(fault_log("t.bin", NULL, NULL, "429"), 1);
	source_close(s);
	free(u);
}

Test(http, short_bodies_are_retried)
{
	struct source *s;
	char *u;

	faulty("s.bin", 2 * BLK + 3, 16, "short", "1", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	read_whole(s, "s.bin");
	cr_assert_eq(fault_log("s.bin", "GET", NULL, NULL), 2);
	source_close(s);
	free(u);
}

Test(http, longer_body_than_asked_is_an_error)
{
	struct source *s;
	char *u, *text;

	faulty("o.bin", 1000, 17, "overlong", "0", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	text = read_fails(s, 100, 0);
	cr_assert(strstr(text, u) && strstr(text, "more than"), "%s", text);
	free(text);
	source_close(s);
	free(u);
}

Test(http, https_verified_and_http2)
{
	struct source *s;
	struct capture c;
	uint8_t *want, *got;
	size_t len;
	char *u, *text;

	write_file("www/h.bin", 2 * BLK + 9, 19);
	start_nginx(1);
	u = url_of("h.bin");
	/* without the CA: refused */
	{
		struct source_config cfg = { .timeout_s = 5, .retries = 1 };

		cr_assert_eq(source_env_new(&cfg, &env), 0);
		capture_start(&c);
		cr_assert_eq(source_open(env, u, &s), -EIO);
		text = capture_end(&c);
		cr_assert(strstr(text, u) && strstr(text, "certificate"), "%s", text);
		free(text);
		source_env_free(env);
		/* insecure: served */
		cfg.insecure = 1;
		cr_assert_eq(source_env_new(&cfg, &env), 0);
		cr_assert_eq(source_open(env, u, &s), 0);
		source_close(s);
		source_env_free(env);
		env = NULL;
	}
	new_env(5, 2, 0, NULL);		/* with cacert= */
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/h.bin", &len);
	got = malloc(len);
	cr_assert_eq(source_pread(s, got, len, 0), (ssize_t)len);
	cr_assert(!memcmp(got, want, len));
	source_close(s);
	{
		/* every request went over HTTP/2 (the last may not be logged
		 * yet: settle() speaks plain HTTP; the ones before it are) */
		char *p = path_in("access.log"), line[512];
		FILE *f = fopen(p, "r");
		int h2 = 0, n = 0;

		cr_assert(f);
		while (fgets(line, sizeof(line), f)) {
			n++;
			h2 += strstr(line, "HTTP/2.0") != NULL;
		}
		fclose(f);
		free(p);
		cr_assert(n >= 2 && h2 == n, "%d of %d requests over HTTP/2", h2, n);
	}
	free(want);
	free(got);
	free(u);
}

/* ---- many threads at once ---- */

struct reader {
	struct source *s;
	const uint8_t *want;
	size_t len;
	uint64_t seed;
	int bad;
};

static void *reader(void *arg)
{
	struct reader *r = arg;
	uint8_t *got = malloc(3 * BLK);
	uint64_t off, seed = r->seed;
	size_t k, e;
	ssize_t n;
	int i;

	for (i = 0; i < 150 && got; i++) {
		off = rnd(&seed) % r->len;
		k = 1 + rnd(&seed) % (3 * BLK);
		e = r->len - off < k ? r->len - off : k;
		n = source_pread(r->s, got, k, off);
		if (n != (ssize_t)e || memcmp(got, r->want + off, e))
			r->bad++;
	}
	free(got);
	return NULL;
}

Test(http, concurrent_readers)
{
	struct reader rd[8];
	pthread_t t[8];
	struct source *s;
	uint8_t *want;
	size_t len;
	char *u;
	int i;

	write_file("www/m.bin", 24 * BLK + 321, 20);
	start_nginx(0);
	/* a cache of 6 blocks: blocks are evicted and fetched again while
	 * other threads read them */
	new_env(5, 2, 6 * (BLK + 256), NULL);
	u = url_of("m.bin");
	cr_assert_eq(source_open(env, u, &s), 0);
	want = read_back("www/m.bin", &len);
	for (i = 0; i < 8; i++) {
		rd[i] = (struct reader){ s, want, len, (uint64_t)i * 7919 + 1, 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, reader, &rd[i]), 0);
	}
	for (i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(rd[i].bad, 0, "thread %d: %d reads wrong", i, rd[i].bad);
	}
	source_close(s);
	free(want);
	free(u);
}

/* ---- bounds: one deadline per read, shared outcomes, cancelling ---- */

#define SLACK 2.0	/* seconds over a bound: a noisy 2-core VM, ASan */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A server that answers HEAD and never a GET, timeout=1, retries=5: each
 * attempt could wait 1 s, six of them with their backoff ~8 s (issue 16:
 * 6 x 30 s).  The read gives up at read_timeout, 2 x timeout = 2 s, all
 * of it included. */
Test(http, stalled_read_ends_at_its_deadline)
{
	struct source *s;
	char *u, *text;
	double t;

	faulty("dl.bin", 1000, 22, "stall", "0", 1, 5, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	t = now_s();
	text = read_fails(s, 100, 0);
	t = now_s() - t;
	cr_assert(t >= 0.9 && t < 2 + SLACK, "EIO after %.1f s, read_timeout 2 s", t);
	cr_assert(strstr(text, u) && strstr(text, "bytes 0-999") &&
		  strstr(text, "read_timeout=2") && strstr(text, "attempts"), "%s", text);
	/* the first attempt's 1 s, and what is left for a second */
	cr_assert(fault_log("dl.bin", "GET", NULL, "stalled") <= 2, "%d GETs",
		  fault_log("dl.bin", "GET", NULL, "stalled"));
	free(text);
	source_close(s);
	free(u);
}

struct bg_read {
	struct source *s;
	uint64_t off;
	struct source_cancel cancel;
	int scoped;		/* read under `cancel` */
	ssize_t rc;
	pthread_t t;
};

static void *bg_reader(void *arg)
{
	struct bg_read *b = arg;
	uint8_t buf[100];

	if (b->scoped)
		source_cancel_scope(&b->cancel);
	b->rc = source_pread(b->s, buf, sizeof(buf), b->off);
	source_cancel_scope(NULL);
	return NULL;
}

static void bg_start(struct bg_read *b, struct source *s, uint64_t off, int scoped)
{
	*b = (struct bg_read){ .s = s, .off = off, .scoped = scoped, .rc = 1 };
	cr_assert_eq(pthread_create(&b->t, NULL, bg_reader, b), 0);
}

static void nap(double sec)
{
	struct timespec ts = { (time_t)sec, (long)((sec - (time_t)sec) * 1e9) };

	nanosleep(&ts, NULL);
}

/* Two reads of one block at once on a stalled server share one request and
 * its failure: one round of attempts, not one per read (before: the second
 * waited for the first, then sent its own round, 4 GETs and twice the
 * time).  A read of the block right after (the kernel asking again for the
 * page its failed readahead had) takes that failure at once. */
Test(http, reads_of_the_same_blocks_share_a_failure)
{
	struct bg_read a, b;
	struct source *s;
	uint8_t buf[100];
	char *u;
	double t;
	int gets;

	faulty("sh.bin", 4 * BLK, 23, "stall", "0", 1, 1, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	t = now_s();
	bg_start(&a, s, 0, 0);
	bg_start(&b, s, 200, 0);
	pthread_join(a.t, NULL);
	pthread_join(b.t, NULL);
	t = now_s() - t;
	cr_assert(a.rc == -EIO && b.rc == -EIO, "%zd %zd", a.rc, b.rc);
	cr_assert_lt(t, 2 + SLACK, "%.1f s for two reads of one block", t);
	gets = fault_log("sh.bin", "GET", NULL, "stalled");
	cr_assert(gets >= 1 && gets <= 2, "%d GETs: a round per read", gets);
	/* taken at once: no new request (counted, not timed: a loaded
	 * machine made a 0.5 s bound fail once in a clean-clone run) */
	cr_assert_eq(source_pread(s, buf, sizeof(buf), 50), -EIO);
	cr_assert_eq(fault_log("sh.bin", "GET", NULL, "stalled"), gets,
		     "asked again: a new round of GETs");
	source_close(s);
	free(u);
}

/* Issue 25: a failure is held for the bytes of the read that failed (the
 * kernel asks again for that page right after), not for the other bytes
 * of its blocks: a read of another part of the same block right after,
 * the server answering again, is answered (before: EIO for 2 s). */
Test(http, failure_is_held_for_its_bytes_only)
{
	struct source *s;
	uint8_t buf[100], *want;
	size_t len;
	char *u, *text;

	faulty("hb.bin", 4 * BLK, 25, "getfail", "2", 5, 1, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	text = read_fails(s, 100, 0);	/* 2 attempts, 2 x 500 */
	free(text);
	cr_assert_eq(fault_log("hb.bin", "GET", NULL, "500"), 2);
	cr_assert_eq(source_pread(s, buf, sizeof(buf), 50), -EIO,
		     "the same bytes asked again take the failure");
	cr_assert_eq(fault_log("hb.bin", "GET", NULL, "500"), 2, "without a request");
	cr_assert_eq(source_pread(s, buf, sizeof(buf), 1000), (ssize_t)sizeof(buf),
		     "other bytes of the same block are fetched");
	want = read_back("www/hb.bin", &len);
	cr_assert(len == 4 * BLK && !memcmp(buf, want + 1000, sizeof(buf)),
		  "the file's bytes");
	free(want);
	source_close(s);
	free(u);
}

/* read_timeout 60 s: only source_cancel ends these reads early.  A read
 * waiting for another's request and the read running it each give EINTR
 * at once when cancelled; the other goes on waiting, and when the one
 * running the request is cancelled its request is dropped and the read
 * that waited sends its own. */
Test(http, cancelled_reads_give_eintr_at_once)
{
	struct bg_read a, b;
	struct source *s;
	char *u;
	double t;

	faulty("cn.bin", 4 * BLK, 24, "stall", "0", 30, 1, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	bg_start(&a, s, 0, 1);		/* sends the request */
	nap(0.3);
	bg_start(&b, s, 300, 1);	/* waits for it */
	nap(0.3);
	t = now_s();
	source_cancel(&b.cancel);
	pthread_join(b.t, NULL);
	cr_assert_eq(b.rc, -EINTR);
	/* "at once": far under the 30 s stall, whatever the machine's load */
	cr_assert_lt(now_s() - t, 10.0, "the waiting read took %.1f s", now_s() - t);
	cr_assert_eq(a.rc, 1, "the other read ended too (%zd)", a.rc);

	bg_start(&b, s, 300, 1);	/* waits again */
	nap(0.3);
	t = now_s();
	source_cancel(&a.cancel);
	pthread_join(a.t, NULL);
	cr_assert_eq(a.rc, -EINTR);
	cr_assert_lt(now_s() - t, 10.0, "the read running the request took %.1f s",
		     now_s() - t);
	nap(0.5);
	cr_assert_eq(b.rc, 1, "the waiting read ended with its request (%zd)", b.rc);
	cr_assert_eq(fault_log("cn.bin", "GET", NULL, "stalled"), 2,
		     "the dropped request was not sent again by the read waiting");
	source_cancel(&b.cancel);
	pthread_join(b.t, NULL);
	cr_assert_eq(b.rc, -EINTR);
	source_close(s);
	free(u);
}

/* A 206 without Content-Length whose body ends early when the server
 * closes: only Content-Range says it is short.  Retried, then EIO: never
 * served short, nor padded. */
Test(http, short_body_without_length_is_retried_then_eio)
{
	struct source *s;
	char *u, *text;

	faulty("nl.bin", 3 * BLK, 25, "nolen", "100", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	text = read_fails(s, 2 * BLK, 100);
	cr_assert(strstr(text, u) && strstr(text, "short body"), "%s", text);
	cr_assert_eq(fault_log("nl.bin", "GET", NULL, "206"), 3, "3 attempts");
	free(text);
	source_close(s);
	free(u);
}

Test(http, short_body_without_length_once_is_retried)
{
	struct source *s;
	char *u;

	faulty("nm.bin", 3 * BLK, 26, "nolen", "1", 5, 2, &u);
	cr_assert_eq(source_open(env, u, &s), 0);
	read_whole(s, "nm.bin");
	cr_assert_eq(fault_log("nm.bin", "GET", NULL, "206"), 2);
	source_close(s);
	free(u);
}

/* Opens www/<rel>, served by http_faults.py with Retry-After: SECONDS on
 * its first answer (a 429 to the HEAD) and the mount's timeout: the
 * seconds the open took; the source is read whole. */
static double open_after_429(const char *rel, const char *seconds, unsigned timeout)
{
	struct source *s;
	char *u;
	double t;

	fault_seconds = seconds;
	faulty(rel, 100, 27, "r429", "1", timeout, 2, &u);
	t = now_s();
	cr_assert_eq(source_open(env, u, &s), 0);
	t = now_s() - t;
	cr_assert_eq(fault_log(rel, NULL, NULL, "429"), 1);
	read_whole(s, rel);
	source_close(s);
	free(u);
	return t;
}

/* Retry-After: N is waited for N s (the backoff alone waits 50-100 ms) */
Test(http, retry_after_is_waited_for)
{
	double t = open_after_429("ra.bin", "2", 5);

	cr_assert(t >= 1.9 && t < 2 + SLACK, "opened after %.2f s, Retry-After: 2", t);
}

/* ... but no longer than timeout */
Test(http, retry_after_is_capped_by_the_timeout)
{
	double t = open_after_429("rc.bin", "30", 1);

	cr_assert(t >= 0.9 && t < 1 + SLACK, "opened after %.2f s, timeout=1", t);
}

/* The one way messages say how many attempts a request made. */
Test(http, attempts_said_once)
{
	cr_assert_str_eq(httpreq_attempts(1).s, "1 attempt");
	cr_assert_str_eq(httpreq_attempts(0).s, "0 attempts");
	cr_assert_str_eq(httpreq_attempts(3).s, "3 attempts");
	cr_assert_str_eq(httpreq_attempts(UINT_MAX).s, "4294967295 attempts");
}
