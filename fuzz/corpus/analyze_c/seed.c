#include "util.h"

static int helper(int x) {
    return SQUARE(x);
}

/* Parses argv into options. */
int parse_args(int argc, char **argv, option_t *out) {
    for (int i = 0; i < argc; i++) {
        if (argv[i][0] == '-') {
            out[i].value = helper(i);
        } else {
            log_arg(argv[i]);
        }
    }
    return 0;
}
