/* burrow-cli: the engine, headless. */
#include <glib.h>
#include <locale.h>
#include <stdio.h>
#include <string.h>

#include "burrow-config.h"
#include "commands.h"
#ifdef BURROW_TESTING
#include "stream/mem-limits.h"
#endif

static const BwCliCommand commands[] = {
  { "inspect", "Describe a checkpoint folder without loading it", bw_cli_inspect_main },
  { "run", "Run a model over token ids (teacher forcing or greedy decode)", bw_cli_run_main },
  { "bench", "Measure the engine: bench kernels (matrix kernels vs memory bandwidth), bench decode (time per token vs the disk and memory roofline)", bw_cli_bench_main },
  { "tokenize", "Text on stdin to token ids, or ids back to text (--decode)", bw_cli_tokenize_main },
  { "synth", "Write a synthetic checkpoint in a family's real format", bw_cli_synth_main },
  { "chat", "Chat with a model in the terminal (multi-turn, --session to keep it)", bw_cli_chat_main },
  { "serve", "Serve a model over an OpenAI-compatible HTTP API", bw_cli_serve_main },
  { "template", "Render a chat template (a reference case, or a checkpoint's own)", bw_cli_template_main },
  { "convert", "Write a compact copy of a checkpoint (compressed-tensors INT4/INT8/MXFP4)", bw_cli_convert_main },
  { "models", "List the models Ollama, LM Studio and the Hugging Face cache keep here, and whether Burrow runs them", bw_cli_models_main },
  { "compare", "Compare two checkpoints of one model over a text (perplexity, KL, top-1)", bw_cli_compare_main },
};

static void
print_usage (FILE *out)
{
  fprintf (out, "Usage: burrow-cli COMMAND [OPTION…]\n\nCommands:\n");
  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    fprintf (out, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf (out, "\nRun 'burrow-cli COMMAND --help' for a command's options.\n");
}

int
main (int argc, char **argv)
{
  setlocale (LC_ALL, "");
#ifdef BURROW_TESTING
  /* The memory limits from a fake /proc and /sys (cgroup layouts a test cannot create). */
  if (g_getenv ("BURROW_TEST_MEM_ROOT") != NULL)
    bw_mem_limits_set_default_root (g_getenv ("BURROW_TEST_MEM_ROOT"));
#endif

  if (argc < 2 || strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0)
    {
      print_usage (argc < 2 ? stderr : stdout);
      return argc < 2 ? 2 : 0;
    }
  if (strcmp (argv[1], "--version") == 0)
    {
      printf ("burrow-cli %s\n", BURROW_VERSION);
      return 0;
    }

  for (gsize i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (argv[1], commands[i].name) == 0)
      {
        /* Usage lines and messages then read "burrow-cli run [OPTION…]". */
        g_autofree char *prgname = g_strdup_printf ("burrow-cli %s", commands[i].name);
        g_set_prgname (prgname);
        return commands[i].main (argc - 1, argv + 1);
      }

  fprintf (stderr, "burrow-cli: unknown command '%s'\n", argv[1]);
  print_usage (stderr);
  return 2;
}
