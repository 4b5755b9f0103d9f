/* burrow-cli bench decode (dispatched from cmd-bench.c). */
#pragma once

int bw_cli_bench_decode_main (int argc, char **argv);
