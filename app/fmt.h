/* fmt.h — `physc fmt FILE... [-w | --check]`: the canonical layout of .phys files. */
#ifndef PHYSC_FMT_H
#define PHYSC_FMT_H

/* argv: the arguments after `fmt`. The exit status. */
int fmt_main(int argc, char **argv);

#endif
