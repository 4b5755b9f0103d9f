/* burrow-cli subcommands. Each lives in its own cmd-<name>.c and returns the exit status. */
#pragma once

typedef struct {
  const char *name;
  const char *summary;
  int (*main) (int argc, char **argv);   /* argv[0] is the command name */
} BwCliCommand;

int bw_cli_inspect_main (int argc, char **argv);
/* inspect's report on a .gguf file, split part or folder of one (cmd-inspect-gguf.c). */
int bw_cli_inspect_gguf (const char *path, gboolean list_tensors);
int bw_cli_run_main (int argc, char **argv);
int bw_cli_bench_main (int argc, char **argv);
int bw_cli_tokenize_main (int argc, char **argv);
int bw_cli_synth_main (int argc, char **argv);
int bw_cli_chat_main (int argc, char **argv);
int bw_cli_serve_main (int argc, char **argv);
int bw_cli_template_main (int argc, char **argv);
int bw_cli_convert_main (int argc, char **argv);
int bw_cli_compare_main (int argc, char **argv);
int bw_cli_models_main (int argc, char **argv);
