/* SPDX-License-Identifier: BSD-2-Clause
 *
 * The emulation's memories: each memory id ("@N", or the region a port
 * lives in) is one small mapping per process holding the netmap_if of
 * every open in that memory, each in its own 4 KiB slot (emu.c tells
 * why).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "emu_priv.h"

#define NME_AUTO_MEM_ID 40000u       /* ids for memories without "@N" */

pthread_mutex_t nme_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nme_mem *mems;
static uint16_t next_auto_id = NME_AUTO_MEM_ID;

static uint16_t mem_id_of_region(const char *region)
{
	unsigned n;
	char tail;
	if (sscanf(region, "mem%u%c", &n, &tail) == 1 && n > 0 && n < 65536)
		return (uint16_t)n;
	return 0;
}

/* The memory of a port in `region` (under lock): one per named region;
 * "memN" (from "@N") is memory id N, other regions get ids from
 * NME_AUTO_MEM_ID up, private ones one each. */
struct nme_mem *nme_mem_get(const char *region)
{
	uint16_t id = mem_id_of_region(region);
	for (struct nme_mem *m = mems; m; m = m->next)
		if (region[0] && strcmp(m->region, region) == 0)
			return m;
	struct nme_mem *m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->base = nme_libc.mmap(NULL, NME_MEM_SIZE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m->base == MAP_FAILED) {
		free(m);
		return NULL;
	}
	if (!id) {
		/* A private or unnumbered region: an id of its own. */
		for (;;) {
			id = next_auto_id++;
			if (next_auto_id == 0)
				next_auto_id = NME_AUTO_MEM_ID;
			bool taken = false;
			char name[16];
			snprintf(name, sizeof(name), "mem%u", id);
			taken = strcmp(name, region) == 0;
			for (struct nme_mem *o = mems; o; o = o->next)
				taken |= o->id == id;
			if (!taken)
				break;
		}
	}
	m->id = id;
	snprintf(m->region, sizeof(m->region), "%s", region);
	m->next = mems;
	mems = m;
	return m;
}

/* Free a memory nobody binds or maps any more (under lock). */
void nme_mem_put(struct nme_mem *m)
{
	if (m->ports > 0 || m->maps > 0)
		return;
	for (struct nme_mem **pp = &mems; *pp; pp = &(*pp)->next)
		if (*pp == m) {
			*pp = m->next;
			break;
		}
	nme_libc.munmap(m->base, NME_MEM_SIZE);
	free(m);
}

bool nme_mem_region_of_id(uint16_t id, char *region, size_t len)
{
	bool known = false;
	pthread_mutex_lock(&nme_lock);
	for (struct nme_mem *m = mems; m; m = m->next)
		if (m->id == id) {
			known = true;
			snprintf(region, len, "%s", m->region);
		}
	pthread_mutex_unlock(&nme_lock);
	return known;
}

int nme_munmap(void *addr, size_t len)
{
	(void)len;
	int done = 0;
	pthread_mutex_lock(&nme_lock);
	for (struct nme_mem *m = mems; m; m = m->next)
		if ((char *)addr == m->base) {
			if (m->maps > 0)
				m->maps--;
			nme_mem_put(m);
			done = 1;
			break;
		}
	pthread_mutex_unlock(&nme_lock);
	return done;
}
