/* cli_args.h — command-line values read one way in physc and in the programs it emits: a
   count is decimal digits alone ("1e1", "0x3", "2.0" and " 3" are refused, not read as 10,
   3, 2 and 3 by one reader and refused by another), a real number is decimal notation, a
   value never looks like an option ("--out --epochs 2" is a missing value, not a folder
   named --epochs), and an option is given once. */
#ifndef PRT_CLI_ARGS_H
#define PRT_CLI_ARGS_H
#include <stdbool.h>

/* A whole number in decimal digits alone, in [lo, hi], into *x. */
bool prt_arg_count(const char *v, long lo, long hi, long *x);

/* A finite real number in decimal notation (sign, digits, point, exponent), in [lo, hi]. */
bool prt_arg_real(const char *v, double lo, double hi, double *x);

/* The value of the option argv[*i] (advancing *i past it), or NULL after "WHO: OPTION needs
   a value" on stderr: there is none, it is empty, or it is itself an option (starts with
   "--", or is -q, -h or -o). A lone "-" (standard output) is a value. */
const char *prt_arg_value(int argc, char **argv, int *i, const char *who);

/* Options seen so far on a command line, to refuse one given twice. */
typedef struct PrtArgsSeen {
    const char *names[64];
    int n;
} PrtArgsSeen;

/* False (after "WHO: OPTION is given twice" on stderr) if `name` was seen; else records it.
   Aliases (-o, --out) are to be passed under one name. */
bool prt_arg_once(PrtArgsSeen *seen, const char *name, const char *who);

/* Standard output line-buffered when it and standard error are one file (`cmd > log 2>&1`),
   so that their lines come in the order they were written. */
void prt_stdio_order(void);

#endif
