/*
 * http_fixture.h - what tests/unit/test_http.c and test_http_faults.c share:
 * nginx from Debian started per test on a free loopback port (TLS too),
 * tests/unit/http_faults.py for the faults nginx cannot make, a source_env
 * per test, and the servers' logs read back as counts of requests.  Its
 * functions are static inline: each test program includes it once, and a
 * program need not use all of them.
 *
 * Not for: anything but those two test programs.
 */
#ifndef SFS_TEST_HTTP_FIXTURE_H
#define SFS_TEST_HTTP_FIXTURE_H

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

static inline char *path_in(const char *rel)
{
	char *p;

	cr_assert(asprintf(&p, "%s/%s", sv.dir, rel) > 0);
	return p;
}

static inline char *url_of(const char *rel)
{
	char *p;

	cr_assert(asprintf(&p, "%s/%s", sv.url, rel) > 0);
	return p;
}

/* A pattern no two offsets of one file share often: a 64-bit LCG per seed. */
static inline void fill(uint8_t *buf, size_t n, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		buf[i] = (uint8_t)(x >> 56);
	}
}

static inline void write_file(const char *rel, size_t n, uint64_t seed)
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
static inline uint8_t *read_back(const char *rel, size_t *n)
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

static inline void set_mtime(const char *rel, time_t t)
{
	char *p = path_in(rel);
	struct timeval tv[2] = { { t, 0 }, { t, 0 } };

	cr_assert_eq(utimes(p, tv), 0);
	free(p);
}

static inline int free_port(void)
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

static inline int accepts(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int s = socket(AF_INET, SOCK_STREAM, 0), ok;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(s);
	return ok;
}

/* fork + exec argv, dying with this process; stdout to out_fd when >= 0. */
static inline pid_t spawn(char *const argv[], int out_fd)
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

static inline void make_dirs(void)
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

static inline void write_conf(int port)
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

static inline void make_cert(void)
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
static inline int wait_ready(pid_t pid, int port)
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

static inline void start_nginx(int tls)
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
static inline void start_faults(const char *rel, const char *mode, const char *n)
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

static inline void new_env(unsigned timeout, unsigned retries, uint64_t cache,
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

static inline void setup(void)
{
	make_dirs();
}

static inline void teardown(void)
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


/*
 * nginx writes a request's log line once its last byte is sent, which can
 * be after the client has it.  nginx here is one process with one event
 * loop, so once it has answered a request sent now, every earlier line is
 * written.  The marker's own lines are not counted.
 */
#define MARKER "/.settle"

static inline void settle(void)
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
static inline int count_log(const char *log, const char *w0, const char *w1,
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
static inline int data_gets(const char *rel)
{
	char uri[256];

	snprintf(uri, sizeof(uri), "/%s", rel);
	return count_log("access.log", "GET", uri, "!\"bytes=0-0\"");
}

static inline int all_requests(void)
{
	return count_log("access.log", NULL, NULL, NULL);
}

/* Body bytes nginx sent for data GETs of /rel (the sixth word). */
static inline uint64_t bytes_sent(const char *rel)
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
static inline int connections(void)
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

static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* n random reads of s checked against want (len bytes). */
static inline void random_reads(struct source *s, const uint8_t *want, size_t len,
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


#endif
