/* SPDX-License-Identifier: BSD-2-Clause
 *
 * libc's own open, ioctl, mmap, poll, close, ... for the emulation and
 * the interposition to call past themselves: looked up once, in libc
 * itself (the preload object's names stand first in the global scope).
 */
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <pthread.h>

#include "emu.h"

struct nme_libc nme_libc;
static pthread_once_t libc_once = PTHREAD_ONCE_INIT;

/* libc's own definition of a function: looked up in libc itself, not in
 * the global scope, where the preload object's stands first. */
static void *next_sym(const char *name)
{
	static void *libc;
	if (!libc)
		libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
	void *p = libc ? dlsym(libc, name) : NULL;
	if (!p)
		p = dlsym(RTLD_NEXT, name);
	return p;
}

static void libc_load(void)
{
#define LOAD(f) *(void **)&nme_libc.f = next_sym(#f)
	LOAD(open);
	LOAD(openat);
	LOAD(ioctl);
	LOAD(mmap);
	LOAD(munmap);
	LOAD(poll);
	LOAD(ppoll);
	LOAD(select);
	LOAD(pselect);
	LOAD(close);
	LOAD(dup);
	LOAD(dup2);
	LOAD(dup3);
	LOAD(epoll_ctl);
	LOAD(epoll_wait);
	LOAD(epoll_pwait);
#undef LOAD
}

void nme_libc_init(void)
{
	pthread_once(&libc_once, libc_load);
}

__attribute__((constructor)) static void libc_at_load(void)
{
	nme_libc_init();
}
