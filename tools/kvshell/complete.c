/*
 * complete.c — Tab completion in an interactive session: the first word
 * completes to a command name, the word after `help` too, and the word after
 * `load` to a file name. Keys and values are data, so nothing completes them.
 */
#include "tools/kvshell/kvshell.h"

#include <editline/readline.h>
#include <stdlib.h>
#include <string.h>

static bool blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

/* Command names starting with `text`, one per call; state 0 starts over. */
static char *next_command(const char *text, int state)
{
    static size_t i, len;
    if (state == 0) {
        i = 0;
        len = strlen(text);
    }
    const char *name;
    while ((name = kvs_command_name(i++)) != NULL)
        if (strncmp(name, text, len) == 0)
            return strdup(name);
    return NULL;
}

/* The words before line[start], where the word being completed starts:
 * how many, and the first one. Quotes do not matter here. */
static size_t words_before(const char *line, int start, const char **first, size_t *first_len)
{
    size_t n = 0;
    for (int i = 0; i < start;) {
        while (i < start && blank(line[i]))
            i++;
        if (i >= start)
            break;
        int from = i;
        while (i < start && !blank(line[i]))
            i++;
        if (n++ == 0) {
            *first = line + from;
            *first_len = (size_t)(i - from);
        }
    }
    return n;
}

static bool is(const char *word, size_t len, const char *name)
{
    return len == strlen(name) && memcmp(word, name, len) == 0;
}

static char **complete(const char *text, int start, int end)
{
    (void)end;
    const char *first = NULL;
    size_t len = 0;
    size_t n = words_before(rl_line_buffer, start, &first, &len);
    /* Left unset, readline goes on to complete a file name: only for load. */
    rl_attempted_completion_over = !(n == 1 && is(first, len, "load"));
    if (n == 0 || (n == 1 && is(first, len, "help")))
        return rl_completion_matches(text, next_command);
    return NULL;
}

void kvs_complete_setup(void)
{
    rl_readline_name = "kvshell"; /* for "kvshell:" lines in ~/.editrc */
    rl_attempted_completion_function = complete;
}
