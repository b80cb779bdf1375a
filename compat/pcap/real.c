/* SPDX-License-Identifier: BSD-2-Clause
 *
 * Finding and loading the system libpcap, once, on first use.
 *
 * It has the same soname as this library (libpcap.so.0.8), so it is
 * opened by its full path, found in this order:
 *   1. $PKTMAP_PCAP_REAL;
 *   2. a libpcap already loaded in the process that is not this library
 *      (the LD_PRELOAD variant: the tool's own libpcap);
 *   3. libpcap.so.0.8 and libpcap.so.1 in the library directory of the
 *      libpcap this was built against, then in the usual directories.
 * A candidate that turns out to be this library (it exports
 * pktmap_pcap_compat) is refused, so a wrong path cannot make every call
 * forward to itself.
 */
#include <dlfcn.h>
#include <link.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"

#ifndef PMC_SYSTEM_LIBDIR
#define PMC_SYSTEM_LIBDIR ""
#endif

/* RTLD_DEEPBIND keeps the real library's calls to its own exported
 * functions inside it. Without it (the sanitizers refuse it) those calls
 * come to this library's functions of the same name, which pass any
 * pcap_t that is not theirs straight back: slower, the same result. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PMC_DEEPBIND 0
#else
#define PMC_DEEPBIND RTLD_DEEPBIND
#endif

/* The mark that tells this library from the real one. */
PMC_EXPORT const char pktmap_pcap_compat[] = "pktmap " PKTMAP_VERSION;

static struct pmc_real real;
static const struct pmc_real *real_ok;
static char real_err[PCAP_ERRBUF_SIZE];
static pthread_once_t real_once = PTHREAD_ONCE_INIT;

/* This library's own file, to never load it as the real one. */
static void self_path(char *out, size_t len)
{
	Dl_info di;

	out[0] = 0;
	if (dladdr((void *)pktmap_pcap_compat, &di) && di.dli_fname &&
	    !realpath(di.dli_fname, out))
		snprintf(out, len, "%s", di.dli_fname);
}

struct loaded_search {
	const char *self;
	char found[PATH_MAX];
};

static int loaded_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct loaded_search *s = arg;
	const char *name = info->dlpi_name, *base;
	char rp[PATH_MAX];

	(void)size;
	if (!name || !name[0])
		return 0;
	base = strrchr(name, '/');
	base = base ? base + 1 : name;
	if (strncmp(base, "libpcap.so", 10) != 0 || !realpath(name, rp) ||
	    strcmp(rp, s->self) == 0)
		return 0;
	snprintf(s->found, sizeof(s->found), "%s", rp);
	return 1;
}

static void *try_open(const char *path, const char *self)
{
	char rp[PATH_MAX];
	void *h;

	if (!path || !path[0] || !realpath(path, rp) || strcmp(rp, self) == 0)
		return NULL;
	h = dlopen(rp, RTLD_NOW | RTLD_LOCAL | PMC_DEEPBIND);
	if (!h) {
		snprintf(real_err, sizeof(real_err), "%s", dlerror());
		return NULL;
	}
	if (dlsym(h, "pktmap_pcap_compat")) { /* ourselves after all */
		dlclose(h);
		return NULL;
	}
	return h;
}

static void *find_real(void)
{
	static const char *const dirs[] = {
		PMC_SYSTEM_LIBDIR,
		"/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
		"/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu",
		"/usr/lib64", "/lib64", "/usr/lib", "/lib", "/usr/local/lib",
	};
	static const char *const names[] = { "libpcap.so.0.8", "libpcap.so.1" };
	struct loaded_search s;
	char self[PATH_MAX], path[PATH_MAX];
	const char *env = getenv("PKTMAP_PCAP_REAL");
	void *h;

	self_path(self, sizeof(self));
	if (env && env[0]) {
		h = try_open(env, self);
		if (!h && !real_err[0])
			snprintf(real_err, sizeof(real_err),
				 "PKTMAP_PCAP_REAL=%s is not the system libpcap",
				 env);
		return h;
	}
	memset(&s, 0, sizeof(s));
	s.self = self;
	if (dl_iterate_phdr(loaded_cb, &s) && (h = try_open(s.found, self)))
		return h;
	for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
		if (!dirs[d][0])
			continue;
		for (size_t n = 0; n < sizeof(names) / sizeof(names[0]); n++) {
			snprintf(path, sizeof(path), "%s/%s", dirs[d], names[n]);
			h = try_open(path, self);
			if (h)
				return h;
		}
	}
	if (!real_err[0])
		snprintf(real_err, sizeof(real_err),
			 "no system libpcap found (set PKTMAP_PCAP_REAL to its "
			 "full path)");
	return NULL;
}

static void load(void)
{
	void *h = find_real();

	if (!h)
		return;
#define PMC_LOAD(n) real.n = (__typeof__(&n))dlsym(h, #n);
	PMC_REAL_SYMS(PMC_LOAD)
#undef PMC_LOAD
	if (!real.pcap_open_dead || !real.pcap_compile || !real.bpf_filter) {
		snprintf(real_err, sizeof(real_err),
			 "the system libpcap lacks pcap_open_dead, pcap_compile "
			 "or bpf_filter");
		return;
	}
	real_ok = &real;
}

const struct pmc_real *pmc_real(void)
{
	/* Called per packet (deliver, pcap_dump): once loaded, one load. */
	static _Atomic(const struct pmc_real *) loaded;
	const struct pmc_real *r = atomic_load_explicit(&loaded,
							memory_order_acquire);

	if (r)
		return r;
	pthread_once(&real_once, load);
	if (real_ok)
		atomic_store_explicit(&loaded, real_ok, memory_order_release);
	return real_ok;
}

const char *pmc_real_error(void)
{
	pmc_real();
	return real_err[0] ? real_err : "the system libpcap is not loaded";
}
