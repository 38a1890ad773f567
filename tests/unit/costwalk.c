/*
 * The sampler's walk (bpf/costwalk.h) on recorded kernel stacks: each line of a stacks file
 * (tests/unit/stacks/KERNEL.txt) is the class a sample belongs in, a tab, then its frames from
 * the leaf up, as a kernel's perf callchain named them. The names are given their roles as the
 * sampler gives them (cost_word_of_name()), then walked as the BPF program walks them.
 *
 * costwalk FILE...     checks every line; exit 1 on any class that differs
 * costwalk --classify  reads "COUNT FRAME FRAME ..." lines and prints "CLASS<TAB>FRAMES" for each
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "costwalk.h"
#include "trace/cost.h"

#define MAX_LINE 8192

/* The class the walk gives the frames in @line (space-separated, leaf first); modifies @line. */
static int walk(char *line)
{
	struct cost_walk w = {};
	char *save = NULL, *name;
	__u32 depth = 0;

	for (name = strtok_r(line, " \t\n", &save); name && depth < COST_FRAMES;
	     name = strtok_r(NULL, " \t\n", &save), depth++) {
		if (!strcmp(name, "(user)"))	/* a sample in user mode: no kernel frame */
			break;
		if (cost_step(&w, depth, cost_word_of_name(name)))
			return w.cls;
	}
	return cost_finish(&w, depth);
}

static int class_of_name(const char *name)
{
	for (int c = 0; c < NR_COST_CLASSES; c++)
		if (!strcmp(cost_class_name(c), name))
			return c;
	return -1;
}

static int classify(void)
{
	char line[MAX_LINE], copy[MAX_LINE];

	while (fgets(line, sizeof(line), stdin)) {
		char *frames = strchr(line, ' ');

		if (!frames)
			continue;
		frames++;
		frames[strcspn(frames, "\n")] = '\0';
		snprintf(copy, sizeof(copy), "%s", frames);
		printf("%s\t%s\n", cost_class_name(walk(copy)), frames);
	}
	return 0;
}

static int check_file(const char *path, int *passed, int *failed)
{
	FILE *f = fopen(path, "r");
	char line[MAX_LINE], copy[MAX_LINE];
	int lineno = 0;

	if (!f) {
		printf("FAIL costwalk: cannot open %s\n", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char *tab = strchr(line, '\t');
		int want, got;

		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (!tab) {
			printf("FAIL costwalk %s:%d: no tab after the class\n", path, lineno);
			(*failed)++;
			continue;
		}
		*tab = '\0';
		want = class_of_name(line);
		snprintf(copy, sizeof(copy), "%s", tab + 1);
		got = walk(copy);
		if (want < 0 || got != want) {
			(*failed)++;
			tab[strcspn(tab + 1, "\n") + 1] = '\0';
			printf("FAIL costwalk %s:%d: want %s, walk says %s: %.200s\n", path, lineno, line,
			       cost_class_name(got), tab + 1);
		} else {
			(*passed)++;
		}
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;

	if (argc == 2 && !strcmp(argv[1], "--classify"))
		return classify();
	if (argc < 2) {
		fprintf(stderr, "usage: costwalk FILE... | costwalk --classify\n");
		return 2;
	}
	for (int i = 1; i < argc; i++)
		if (check_file(argv[i], &passed, &failed))
			failed++;
	printf("costwalk: %d stacks placed as expected, %d not\n", passed, failed);
	return failed ? 1 : 0;
}
