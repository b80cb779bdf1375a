// SPDX-License-Identifier: BSD-2-Clause
/* Run a libFuzzer target's LLVMFuzzerTestOneInput() on files, without
 * libFuzzer: each FILE, or each file in each DIRECTORY given (the
 * target's seeds and any crash found). meson builds the targets with it
 * (tests/meson.build: fuzz_*_seeds), so the seeds run in every test run;
 * tests/fuzz/run.sh does the fuzzing. Exits 1 when a file cannot be read
 * (a target that fails traps). */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	if (!f || fstat(fileno(f), &st) != 0) {
		perror(path);
		if (f)
			fclose(f);
		return -1;
	}
	uint8_t *buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	size_t n = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
	fclose(f);
	if (!buf || n != (size_t)st.st_size) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(buf);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, n);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int runs = 0;
	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		if (!d) {
			if (run_file(argv[i]) != 0)
				return 1;
			runs++;
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			char path[4096];
			if (e->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
			if (run_file(path) != 0) {
				closedir(d);
				return 1;
			}
			runs++;
		}
		closedir(d);
	}
	printf("%d inputs\n", runs);
	return runs ? 0 : 1;
}
