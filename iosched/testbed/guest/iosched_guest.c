/*
 * Licensed under the Apache License, Version 2.0 (the "License"); you may
 * not use this file except in compliance with the License. You may obtain
 * a copy of the License at
 *
 *      http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 * WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 * License for the specific language governing permissions and limitations
 * under the License.
 *
 * iosched-guest: the workload program of the iosched testbed guests.
 *
 * Built on the host with `gcc -static -O2` and run as the only program of a
 * busybox initramfs. It talks to the host over the virtio-serial port named
 * "iosched.0" (no networking), or with --port over another character device:
 * a serial tty (e.g. ttyS1, one of the TCP serial ports Nova writes with
 * [serial_console] enabled) is put in raw mode (cfmakeraw: 8 bits, no echo,
 * no flow control, modem lines ignored, 115200 baud). Guest -> host: text
 * lines. Host -> guest (rr mode only): fixed 16-byte requests. The protocol
 * is the same on every port.
 *
 *   HELLO iosched-guest v1 mode=<m> uptime_ms=<n> iters_per_us=<f>
 *   rr:   request  = <u64 seq><u32 burst_us><u32 flags> (little endian)
 *         flags bit0 = spin by guest clock time (else by calibrated work)
 *         response = "R <seq> <spun_us>\n" after busy-spinning burst_us
 *   burn: "BURN <iterations> <interval_us> <total_iterations>\n" every report
 *   hybrid: rr's requests and responses, and a burn thread in the same
 *         guest (one vCPU: ISACS's I/O-and-CPU vCPU) with burn's reports
 *   disk: "DISK <ops> <interval_us> <reads> <writes> <lat_sum_us>
 *         <lat_max_us> <dropped> h=<bucket>:<count>,...\n" every report
 *         (latency histogram: see lat_bucket())
 *   idle: "IDLE <uptime_ms>\n" every report
 *   dd:   seed 004's dd test, one trial per host request (rr's 16-byte
 *         format: seq, burst_us = MiB to read, 0 = the whole data area):
 *         "DD <seq> <bytes> <elapsed_us> <reads> <writes> <wwait_sum_us>
 *         <wwait_max_us>\n" every report while it runs, "DDEND ..." (same
 *         fields) when the last read completes
 *
 * Usage: iosched-guest --mode rr|burn|hybrid|disk|dd|idle [--opts k=v,k=v]
 *                     [--port P]
 *   P: a device path, or a name under /dev (ttyS1); default: the
 *      virtio-serial port named iosched.0.
 *   On a tty the host may connect late (QEMU drops what the guest writes
 *   while no client is connected), so HELLO is repeated: every second until
 *   the first host byte (rr, hybrid, dd), every 10th report (burn, disk,
 *   idle).
 *   opts: report_ms=1000 pattern=rand|seq write_pct=0 bs=4096 dev=vda
 *         (burn, hybrid) duty_pct=100 period_ms=10: burn at most duty_pct %
 *         of every period_ms (guest clock) and sleep the rest;
 *         (hybrid) burn_nice=0: the burn thread's nice value;
 *         (disk) qd=1 worker threads, rate=0 requests/s in total (0 =
 *         closed loop), arrival=fixed|poisson (open loop's gaps); waits
 *         for dev to appear (a volume attached after boot);
 *         (dd) bs=45056 (44 KiB, blkif's 11 segments), qd reads in
 *         flight, journal_ms=5000 (0 = no journal writes), jsync=0
 *         (1: a commit ends with fdatasync, a virtio flush, as ext4's
 *         commit block does)
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#define PORT_NAME "iosched.0"
#define FLAG_TIME_SPIN 1u

static char port_path[256];
static const char *cur_mode = "idle";
static int tty_port;		/* the port is a serial tty: repeat HELLO */
static int heard;		/* a byte came from the host */
static int report_ms = 1000, write_pct = 0, bs = 4096, seq_pattern = 0;
static int duty_pct = 100, period_ms = 10, burn_nice = 0;
static char dev_path[128] = "/dev/vda";
static double iters_per_us = 1.0;
static volatile uint64_t sink;
static uint64_t burn_count;	/* hybrid: written by the burn thread only */

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + ts.tv_nsec / 1000;
}

static void spin_iters(uint64_t n)
{
	uint64_t i, x = sink;

	for (i = 0; i < n; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink = x;
}

/* Loop iterations per microsecond: best of several short samples, so a
 * preempted sample does not skew it. */
static void calibrate(void)
{
	uint64_t n = 20000, t0, dt;
	int i;

	for (i = 0; i < 12; i++) {
		t0 = now_us();
		spin_iters(n);
		dt = now_us() - t0;
		if (dt < 2000) {
			n *= 2;
			continue;
		}
		if ((double)n / dt > iters_per_us)
			iters_per_us = (double)n / dt;
	}
}

static int find_port(void)
{
	char p[512], name[64];
	struct dirent *e;
	DIR *d;
	FILE *f;
	int tries;

	for (tries = 0; tries < 200; tries++) {
		d = opendir("/sys/class/virtio-ports");
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "/sys/class/virtio-ports/%s/name",
				 e->d_name);
			f = fopen(p, "r");
			if (!f)
				continue;
			if (fgets(name, sizeof(name), f) &&
			    strncmp(name, PORT_NAME, strlen(PORT_NAME)) == 0) {
				snprintf(port_path, sizeof(port_path), "/dev/%.200s",
					 e->d_name);
				fclose(f);
				closedir(d);
				return 0;
			}
			fclose(f);
		}
		if (d)
			closedir(d);
		usleep(50000);
	}
	return -1;
}

/* Write a whole line; blocking waits for the host, non-blocking drops the
 * line when the host is absent or slow (never stalls a workload). */
static void say(int fd, const char *line, int must)
{
	size_t off = 0, len = strlen(line);
	ssize_t n;

	while (off < len) {
		n = write(fd, line + off, len - off);
		if (n > 0) {
			off += n;
		} else if (!must && off == 0) {
			return;
		} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
			return;
		} else {
			usleep(20000);
		}
	}
}

static void hello(int fd, const char *mode)
{
	static int said;
	char line[160];
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	snprintf(line, sizeof(line),
		 "HELLO iosched-guest v1 mode=%s uptime_ms=%lld "
		 "iters_per_us=%.3f\n", mode,
		 (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000,
		 iters_per_us);
	say(fd, line, 1);
	if (!said++)		/* the console shows the first one only */
		fprintf(stderr, "iosched-guest: %s", line);
}

/* A serial tty: raw 8-bit bytes, no echo, no software or hardware flow
 * control, modem lines ignored (CLOCAL: no hangup), a read returns once one
 * byte is in, 115200 baud (the 8250's fastest; QEMU's emulated receive FIFO
 * timeout is 4 character times). */
static int setup_tty(int fd)
{
	struct termios t;

	if (tcgetattr(fd, &t) < 0)
		return -1;
	cfmakeraw(&t);
	t.c_iflag &= ~(IXON | IXOFF | IXANY);
	t.c_cflag &= ~(CRTSCTS | HUPCL);
	t.c_cflag |= CLOCAL | CREAD;
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	cfsetispeed(&t, B115200);
	cfsetospeed(&t, B115200);
	if (tcsetattr(fd, TCSANOW, &t) < 0)
		return -1;
	tcflush(fd, TCIOFLUSH);
	return 0;
}

/* read() from the port; on a tty, until the host's first byte, wait in
 * 1 s steps and repeat HELLO (the host may connect after boot). */
static ssize_t port_read(int fd, void *buf, size_t len)
{
	struct pollfd p;
	ssize_t n;

	while (tty_port && !heard) {
		p.fd = fd;
		p.events = POLLIN;
		p.revents = 0;
		if (poll(&p, 1, 1000) > 0)
			break;
		hello(fd, cur_mode);
	}
	n = read(fd, buf, len);
	if (n > 0)
		heard = 1;
	return n;
}

/* Report modes on a tty: HELLO again every 10th report. */
static void report_hello(int fd)
{
	static unsigned reports;

	if (tty_port && ++reports % 10 == 0)
		hello(fd, cur_mode);
}

/* Serve one request: busy-spin, then write the response line. */
static void serve(int fd, const unsigned char *req)
{
	uint64_t seq, t0, end;
	uint32_t burst, flags;
	char line[64];

	memcpy(&seq, req, 8);
	memcpy(&burst, req + 8, 4);
	memcpy(&flags, req + 12, 4);
	t0 = now_us();
	if (flags & FLAG_TIME_SPIN) {
		end = t0 + burst;
		while (now_us() < end)
			spin_iters(64);
	} else {
		spin_iters((uint64_t)(burst * iters_per_us));
	}
	snprintf(line, sizeof(line), "R %llu %llu\n",
		 (unsigned long long)seq,
		 (unsigned long long)(now_us() - t0));
	say(fd, line, 1);
}

/* Read more of a request; serve it once complete. 0 = host absent. */
static int read_request(int fd, unsigned char *req, size_t *got)
{
	ssize_t n = port_read(fd, req + *got, 16 - *got);

	if (n == 0) {			/* host side not connected */
		*got = 0;
		usleep(50000);
		return 0;
	}
	if (n < 0) {
		if (errno != EINTR && errno != EAGAIN) {
			perror("iosched-guest: read");
			usleep(50000);
		}
		return 1;
	}
	*got += n;
	if (*got == 16) {
		*got = 0;
		serve(fd, req);
	}
	return 1;
}

static void __attribute__((noreturn)) run_rr(int fd)
{
	unsigned char req[16];
	size_t got = 0;

	for (;;)
		read_request(fd, req, &got);
}

/* Duty cycle of burn and hybrid: after duty_pct % of the period has
 * passed (guest clock, so time preempted on the host counts), sleep to the
 * period's end. Returns the next period's start. */
static uint64_t duty_pause(uint64_t start)
{
	uint64_t period = (uint64_t)period_ms * 1000, t;
	struct timespec ts;

	if (duty_pct >= 100)
		return start;
	t = now_us();
	if (t - start < period * duty_pct / 100)
		return start;
	start += period;
	if (start <= t)			/* overran the period: no pause */
		return t;
	ts.tv_sec = start / 1000000;
	ts.tv_nsec = (start % 1000000) * 1000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
	return start;
}

static void burn_report(int fd, uint64_t count, uint64_t interval_us,
			uint64_t total)
{
	char line[96];

	snprintf(line, sizeof(line), "BURN %llu %llu %llu\n",
		 (unsigned long long)count, (unsigned long long)interval_us,
		 (unsigned long long)total);
	say(fd, line, 0);
}

static void __attribute__((noreturn)) run_burn(int fd)
{
	uint64_t last = now_us(), start = last, t, count = 0, total = 0;

	for (;;) {
		spin_iters(4096);
		count += 4096;
		start = duty_pause(start);
		t = now_us();
		if (t - last < (uint64_t)report_ms * 1000)
			continue;
		total += count;
		report_hello(fd);
		burn_report(fd, count, t - last, total);
		count = 0;
		last = t;
	}
}

static void *burn_thread(void *arg)
{
	uint64_t start = now_us();

	(void)arg;
	if (burn_nice)
		setpriority(PRIO_PROCESS, gettid(), burn_nice);
	for (;;) {
		spin_iters(4096);
		__atomic_add_fetch(&burn_count, 4096, __ATOMIC_RELAXED);
		start = duty_pause(start);
	}
	return NULL;
}

/* hybrid: rr in this thread (it blocks in poll(), so each request wakes
 * it), the burn loop in another; this thread also writes the burn
 * reports, non-blocking, so the port has a single user. */
static void __attribute__((noreturn)) run_hybrid(int fd)
{
	uint64_t last = now_us(), t, due, prev = 0, cur, total = 0;
	unsigned char req[16];
	struct pollfd p;
	size_t got = 0;
	pthread_t th;
	int n, fl;

	if (pthread_create(&th, NULL, burn_thread, NULL)) {
		perror("iosched-guest: pthread_create");
		exit(2);
	}
	for (;;) {
		t = now_us();
		due = last + (uint64_t)report_ms * 1000;
		p.fd = fd;
		p.events = POLLIN;
		p.revents = 0;
		n = poll(&p, 1, t >= due ? 0 : (int)((due - t + 999) / 1000));
		t = now_us();
		if (t >= due) {
			cur = __atomic_load_n(&burn_count, __ATOMIC_RELAXED);
			total += cur - prev;
			fl = fcntl(fd, F_GETFL);
			fcntl(fd, F_SETFL, fl | O_NONBLOCK);
			if (tty_port && !heard)
				hello(fd, cur_mode);
			burn_report(fd, cur - prev, t - last, total);
			fcntl(fd, F_SETFL, fl);
			prev = cur;
			last = t;
		}
		if (n > 0 && (p.revents & POLLIN))
			read_request(fd, req, &got);
		else if (n > 0)		/* POLLHUP: no host client */
			usleep(50000);
	}
}

/* disk: qd worker threads, each one synchronous O_DIRECT request at a
 * time. Closed loop (rate 0): a worker issues its next request as soon as
 * the last completes; latency = issue to completion. Open loop (rate > 0):
 * requests arrive at rate/s in total (fixed gaps or Poisson), a free
 * worker takes the next arrival and sleeps until it; latency = arrival to
 * completion, so time waiting for a free worker counts (the tenant's
 * view). An arrival more than BACKLOG_US late is dropped (counted) and
 * the schedule restarts from now, so an overload does not snowball. */
#define LAT_BUCKETS 96		/* 4 per octave, up to 2^24 us */
#define MAX_QD 64
#define BACKLOG_US 2000000ull

static int qd = 1, rate = 0, poisson = 0;
static uint64_t disk_blocks, seq_next;
static int disk_fd;
static pthread_mutex_t disk_mu = PTHREAD_MUTEX_INITIALIZER;
static double next_arrival_us;
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static struct disk_stats {
	uint64_t reads, writes, lat_sum, lat_max, dropped;
	uint32_t hist[LAT_BUCKETS];
} dstats;

/* Bucket of a latency in us: 0..3 exact, then 4 sub-buckets per power of
 * two; bucket i >= 4 covers [(4 + i % 4) << (i / 4 - 1),
 * (5 + i % 4) << (i / 4 - 1)). */
static int lat_bucket(uint64_t v)
{
	int e;

	if (v < 4)
		return (int)v;
	e = 63 - __builtin_clzll(v);
	if (e > 24)
		return LAT_BUCKETS - 1;
	return 4 * (e - 1) + (int)((v >> (e - 2)) & 3);
}

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Natural log of x > 0 without libm (the build links no -lm): x = m 2^e
 * with m in [1, 2), ln m = 2 atanh((m - 1) / (m + 1)) by its series. */
static double ln(double x)
{
	uint64_t bits;
	double m, z, z2, term, sum = 0;
	int e, k;

	memcpy(&bits, &x, 8);
	e = (int)((bits >> 52) & 0x7ff) - 1023;
	bits = (bits & ~(0x7ffull << 52)) | (1023ull << 52);
	memcpy(&m, &bits, 8);
	z = (m - 1) / (m + 1);
	z2 = z * z;
	term = z;
	for (k = 1; k < 30; k += 2) {
		sum += term / k;
		term *= z2;
	}
	return 2 * sum + e * 0.69314718055994530942;
}

static void sleep_until_us(uint64_t t)
{
	struct timespec ts;

	ts.tv_sec = t / 1000000;
	ts.tv_nsec = (t % 1000000) * 1000;
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) ==
	       EINTR)
		;
}

/* Open loop: the next arrival time (us), or 0 if it was dropped. */
static uint64_t take_arrival(void)
{
	uint64_t now = now_us(), t;
	double u;

	pthread_mutex_lock(&disk_mu);
	if (next_arrival_us == 0)
		next_arrival_us = now;
	t = (uint64_t)next_arrival_us;
	if (poisson) {
		u = ((xorshift(&rng_state) >> 11) + 1) * (1.0 / 9007199254740993.0);
		next_arrival_us += -ln(u) * 1e6 / rate;
	} else {
		next_arrival_us += 1e6 / rate;
	}
	if (now > t + BACKLOG_US) {	/* hopelessly late: drop, restart */
		dstats.dropped++;
		next_arrival_us = now;
		t = 0;
	}
	pthread_mutex_unlock(&disk_mu);
	return t;
}

static void *disk_worker(void *arg)
{
	uint64_t x = 88172645463325252ull ^ ((uint64_t)(uintptr_t)arg << 32);
	uint64_t blk, start, lat;
	int is_write;
	void *buf;
	ssize_t n;

	if (posix_memalign(&buf, 4096, bs))
		exit(1);
	memset(buf, 0x5a, bs);
	for (;;) {
		if (rate > 0) {
			start = take_arrival();
			if (!start)
				continue;
			sleep_until_us(start);
		} else {
			start = now_us();
		}
		xorshift(&x);
		blk = seq_pattern
			? __atomic_fetch_add(&seq_next, 1, __ATOMIC_RELAXED) %
			  disk_blocks
			: x % disk_blocks;
		is_write = (int)((x >> 32) % 100) < write_pct;
		if (is_write)
			n = pwrite(disk_fd, buf, bs, (off_t)(blk * bs));
		else
			n = pread(disk_fd, buf, bs, (off_t)(blk * bs));
		if (n != bs) {
			perror("iosched-guest: disk io");
			exit(1);
		}
		lat = now_us() - start;
		pthread_mutex_lock(&disk_mu);
		if (is_write)
			dstats.writes++;
		else
			dstats.reads++;
		dstats.lat_sum += lat;
		if (lat > dstats.lat_max)
			dstats.lat_max = lat;
		dstats.hist[lat_bucket(lat)]++;
		pthread_mutex_unlock(&disk_mu);
	}
	return NULL;
}

/* Every report_ms: "DISK <ops> <interval_us> <reads> <writes> <lat_sum_us>
 * <lat_max_us> <dropped> h=<bucket>:<count>,..." (the first five fields
 * as before the latency figures were added; h= lists non-empty buckets). */
static int run_disk(int fd)
{
	uint64_t size = 0, last, t;
	struct disk_stats s;
	char line[2048];
	pthread_t th;
	size_t off;
	long i;

	/* A volume attached after boot (Nova's `server add volume`) appears
	 * later: wait for it, reporting nothing until it does. */
	while ((disk_fd = open(dev_path, (write_pct ? O_RDWR : O_RDONLY) |
			       O_DIRECT)) < 0 && (errno == ENOENT || errno == ENXIO)) {
		if (tty_port)
			hello(fd, cur_mode);
		sleep(1);
	}
	if (disk_fd < 0 || ioctl(disk_fd, BLKGETSIZE64, &size) < 0 ||
	    size < (uint64_t)bs) {
		perror("iosched-guest: disk");
		return 1;
	}
	disk_blocks = size / bs;
	for (i = 0; i < qd; i++) {
		if (pthread_create(&th, NULL, disk_worker, (void *)i)) {
			perror("iosched-guest: pthread_create");
			return 1;
		}
	}
	last = now_us();
	for (;;) {
		sleep_until_us(last + (uint64_t)report_ms * 1000);
		pthread_mutex_lock(&disk_mu);
		t = now_us();
		s = dstats;
		memset(&dstats, 0, sizeof(dstats));
		pthread_mutex_unlock(&disk_mu);
		off = snprintf(line, sizeof(line),
			       "DISK %llu %llu %llu %llu %llu %llu %llu h=",
			       (unsigned long long)(s.reads + s.writes),
			       (unsigned long long)(t - last),
			       (unsigned long long)s.reads,
			       (unsigned long long)s.writes,
			       (unsigned long long)s.lat_sum,
			       (unsigned long long)s.lat_max,
			       (unsigned long long)s.dropped);
		for (i = 0; i < LAT_BUCKETS && off < sizeof(line) - 32; i++)
			if (s.hist[i])
				off += snprintf(line + off, sizeof(line) - off,
						"%ld:%u,", i, s.hist[i]);
		snprintf(line + off, sizeof(line) - off, "\n");
		report_hello(fd);
		say(fd, line, 0);
		last = t;
	}
}

/* dd (seed 004): sequential O_DIRECT reads of the data area (the disk
 * minus its last JOURNAL_AREA bytes) by qd threads, each taking the next
 * block; every journal_ms from the trial's start a "commit" writes 4 KiB
 * then 20 KiB (O_DIRECT) in the journal area at the disk's end, and while
 * a commit's writes are outstanding no new read starts (reads in flight
 * complete): iosched/simulator/vaio/guest.py's coupling, "dd waits on the journal
 * commit". The trial ends when the last read completes; a commit still
 * outstanding then does not count (the paper's finish times). */
#define JOURNAL_AREA (1u << 20)

static int journal_ms = 5000, bs_set = 0, jsync = 0;
static pthread_mutex_t dd_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dd_cv = PTHREAD_COND_INITIALIZER;
static struct dd_state {
	uint64_t next, nblocks, done, reads, writes, wsum, wmax;
	int committing, stop;
	uint64_t t0;
} dd;

static void *dd_reader(void *arg)
{
	uint64_t blk;
	void *buf;

	(void)arg;
	if (posix_memalign(&buf, 4096, bs))
		exit(1);
	for (;;) {
		pthread_mutex_lock(&dd_mu);
		while (dd.committing && dd.next < dd.nblocks)
			pthread_cond_wait(&dd_cv, &dd_mu);
		if (dd.next >= dd.nblocks) {
			pthread_mutex_unlock(&dd_mu);
			break;
		}
		blk = dd.next++;
		pthread_mutex_unlock(&dd_mu);
		if (pread(disk_fd, buf, bs, (off_t)(blk * bs)) != bs) {
			perror("iosched-guest: dd read");
			exit(1);
		}
		pthread_mutex_lock(&dd_mu);
		dd.done++;
		dd.reads++;
		if (dd.done >= dd.nblocks)
			pthread_cond_broadcast(&dd_cv);
		pthread_mutex_unlock(&dd_mu);
	}
	free(buf);
	return NULL;
}

static void *dd_journal(void *arg)
{
	uint64_t area = *(uint64_t *)arg, t0, w, off = 0, due;
	static const int sizes[2] = {4096, 20480};
	struct timespec ts;
	void *buf;
	int i;

	if (posix_memalign(&buf, 4096, 20480))
		exit(1);
	memset(buf, 0xa5, 20480);
	due = dd.t0 + (uint64_t)journal_ms * 1000;
	pthread_mutex_lock(&dd_mu);
	for (;;) {
		ts.tv_sec = due / 1000000;
		ts.tv_nsec = (due % 1000000) * 1000;
		while (!dd.stop && now_us() < due)
			if (pthread_cond_timedwait(&dd_cv, &dd_mu, &ts) ==
			    ETIMEDOUT)
				break;
		if (dd.stop)
			break;
		dd.committing = 1;
		pthread_mutex_unlock(&dd_mu);
		t0 = now_us();
		for (i = 0; i < 2; i++) {
			if (off + sizes[i] > JOURNAL_AREA)
				off = 0;
			if (pwrite(disk_fd, buf, sizes[i],
				   (off_t)(area + off)) != sizes[i]) {
				perror("iosched-guest: dd journal write");
				exit(1);
			}
			off += sizes[i];
		}
		if (jsync && fdatasync(disk_fd)) {
			perror("iosched-guest: dd journal flush");
			exit(1);
		}
		w = now_us() - t0;
		pthread_mutex_lock(&dd_mu);
		dd.committing = 0;
		dd.writes += 2;
		dd.wsum += w;
		if (w > dd.wmax)
			dd.wmax = w;
		pthread_cond_broadcast(&dd_cv);
		due += (uint64_t)journal_ms * 1000;
	}
	pthread_mutex_unlock(&dd_mu);
	free(buf);
	return NULL;
}

static void dd_line(int fd, const char *tag, uint64_t seq, int must)
{
	char line[256];

	snprintf(line, sizeof(line), "%s %llu %llu %llu %llu %llu %llu %llu\n",
		 tag, (unsigned long long)seq,
		 (unsigned long long)(dd.done * bs),
		 (unsigned long long)(now_us() - dd.t0),
		 (unsigned long long)dd.reads, (unsigned long long)dd.writes,
		 (unsigned long long)dd.wsum, (unsigned long long)dd.wmax);
	if (must) {
		say(fd, line, 1);
	} else {
		int fl = fcntl(fd, F_GETFL);

		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
		say(fd, line, 0);
		fcntl(fd, F_SETFL, fl);
	}
}

static int run_dd(int fd)
{
	uint64_t size = 0, area, seq, mib, next_report;
	unsigned char req[16];
	pthread_t th[MAX_QD], jt;
	struct timespec ts;
	size_t got;
	ssize_t n;
	int i;

	if (!bs_set)
		bs = 45056;
	disk_fd = open(dev_path, O_RDWR | O_DIRECT);
	if (disk_fd < 0 || ioctl(disk_fd, BLKGETSIZE64, &size) < 0 ||
	    size < 2ull * JOURNAL_AREA) {
		perror("iosched-guest: dd disk");
		return 1;
	}
	area = size - JOURNAL_AREA;
	{			/* timed waits are on the monotonic clock */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&dd_cv, &ca);
	}
	for (;;) {
		got = 0;
		while (got < 16) {
			n = port_read(fd, req + got, 16 - got);
			if (n > 0)
				got += n;
			else if (n == 0 || (errno != EINTR && errno != EAGAIN))
				usleep(50000);
		}
		memcpy(&seq, req, 8);
		mib = 0;
		memcpy(&mib, req + 8, 4);
		pthread_mutex_lock(&dd_mu);
		memset(&dd, 0, sizeof(dd));
		dd.nblocks = area / bs;
		if (mib && mib * 1048576 / bs < dd.nblocks)
			dd.nblocks = mib * 1048576 / bs;
		dd.t0 = now_us();
		pthread_mutex_unlock(&dd_mu);
		if (journal_ms > 0 &&
		    pthread_create(&jt, NULL, dd_journal, &area)) {
			perror("iosched-guest: pthread_create");
			return 1;
		}
		for (i = 0; i < qd; i++) {
			if (pthread_create(&th[i], NULL, dd_reader, NULL)) {
				perror("iosched-guest: pthread_create");
				return 1;
			}
		}
		next_report = dd.t0 + (uint64_t)report_ms * 1000;
		pthread_mutex_lock(&dd_mu);
		while (dd.done < dd.nblocks) {
			ts.tv_sec = next_report / 1000000;
			ts.tv_nsec = (next_report % 1000000) * 1000;
			pthread_cond_timedwait(&dd_cv, &dd_mu, &ts);
			if (now_us() >= next_report && dd.done < dd.nblocks) {
				dd_line(fd, "DD", seq, 0);
				next_report += (uint64_t)report_ms * 1000;
			}
		}
		dd_line(fd, "DDEND", seq, 1);
		dd.stop = 1;
		pthread_cond_broadcast(&dd_cv);
		pthread_mutex_unlock(&dd_mu);
		for (i = 0; i < qd; i++)
			pthread_join(th[i], NULL);
		if (journal_ms > 0)
			pthread_join(jt, NULL);
	}
}

static void __attribute__((noreturn)) run_idle(int fd)
{
	struct timespec ts;
	char line[64];

	for (;;) {
		usleep(report_ms * 1000);
		clock_gettime(CLOCK_BOOTTIME, &ts);
		snprintf(line, sizeof(line), "IDLE %lld\n",
			 (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
		report_hello(fd);
		say(fd, line, 0);
	}
}

static void parse_opts(char *s)
{
	char *tok, *save = NULL, *v;

	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		v = strchr(tok, '=');
		if (!v)
			continue;
		*v++ = 0;
		if (!strcmp(tok, "report_ms"))
			report_ms = atoi(v) > 0 ? atoi(v) : 1000;
		else if (!strcmp(tok, "pattern"))
			seq_pattern = !strcmp(v, "seq");
		else if (!strcmp(tok, "write_pct"))
			write_pct = atoi(v);
		else if (!strcmp(tok, "bs")) {
			bs = atoi(v) >= 512 ? atoi(v) : 4096;
			bs_set = 1;
		}
		else if (!strcmp(tok, "dev"))	/* a path, or a name under /dev */
			snprintf(dev_path, sizeof(dev_path), "%s%.100s",
				 strchr(v, '/') ? "" : "/dev/", v);
		else if (!strcmp(tok, "duty_pct"))
			duty_pct = atoi(v) >= 1 && atoi(v) <= 100 ? atoi(v) : 100;
		else if (!strcmp(tok, "period_ms"))
			period_ms = atoi(v) >= 1 ? atoi(v) : 10;
		else if (!strcmp(tok, "burn_nice"))
			burn_nice = atoi(v);
		else if (!strcmp(tok, "qd"))
			qd = atoi(v) >= 1 && atoi(v) <= MAX_QD ? atoi(v) : 1;
		else if (!strcmp(tok, "rate"))
			rate = atoi(v) > 0 ? atoi(v) : 0;
		else if (!strcmp(tok, "arrival"))
			poisson = !strcmp(v, "poisson");
		else if (!strcmp(tok, "jsync"))
			jsync = atoi(v) == 1;
		else if (!strcmp(tok, "journal_ms"))
			journal_ms = atoi(v) >= 0 ? atoi(v) : 5000;
	}
}

int main(int argc, char **argv)
{
	const char *mode = "idle";
	int i, fd, rr, blocking;

	for (i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--mode"))
			mode = argv[i + 1];
		else if (!strcmp(argv[i], "--opts"))
			parse_opts(argv[i + 1]);
		else if (!strcmp(argv[i], "--port"))
			snprintf(port_path, sizeof(port_path), "%s%s",
				 strchr(argv[i + 1], '/') ? "" : "/dev/",
				 argv[i + 1]);
	}
	cur_mode = mode;
	if (!port_path[0] && find_port() < 0) {
		fprintf(stderr, "iosched-guest: no virtio port %s\n", PORT_NAME);
		return 2;
	}
	rr = !strcmp(mode, "rr") || !strcmp(mode, "hybrid");
	blocking = rr || !strcmp(mode, "dd");	/* they read host requests */
	fd = open(port_path, O_RDWR | O_NOCTTY | (blocking ? 0 : O_NONBLOCK));
	if (fd < 0) {
		perror(port_path);
		return 2;
	}
	if (isatty(fd)) {
		if (setup_tty(fd) < 0) {
			perror("iosched-guest: tty setup");
			return 2;
		}
		tty_port = 1;
	}
	if (rr)
		calibrate();
	hello(fd, mode);
	if (!strcmp(mode, "hybrid"))
		run_hybrid(fd);
	if (rr)
		run_rr(fd);
	if (!strcmp(mode, "burn"))
		run_burn(fd);
	if (!strcmp(mode, "disk"))
		return run_disk(fd);
	if (!strcmp(mode, "dd"))
		return run_dd(fd);
	run_idle(fd);
}
