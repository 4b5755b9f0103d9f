/* Kernel levels and the CPU check: a level runs only where the CPU has every feature its
 * library is compiled with. */
#include "kernels/dispatch.h"

#include "kernels/ggml-dot.h"
#include "kernels/ggml-f32act.h"
#include "kernels/kernel-features.h"

#if BW_KERNELS_X86
#include <cpuid.h>
#endif

static const char *const level_names[BW_ISA_COUNT] = {
  [BW_ISA_AUTO] = "auto", [BW_ISA_SCALAR] = "scalar", [BW_ISA_AVX2] = "avx2",
  [BW_ISA_AVX512] = "avx512", [BW_ISA_AVX512_VNNI] = "avx512-vnni",
};

/* What each level's library is compiled for (its -m flags): kernels/meson.build's lists. */
static const char *const level_features[BW_ISA_COUNT][16] = {
  [BW_ISA_AVX2] = { BW_FEATURES_AVX2, NULL },
  [BW_ISA_AVX512] = { BW_FEATURES_AVX512, NULL },
  [BW_ISA_AVX512_VNNI] = { BW_FEATURES_AVX512_VNNI, NULL },
};

#if BW_KERNELS_X86
static const BwKernelTable *const tables[BW_ISA_COUNT] = {
  [BW_ISA_SCALAR] = &bw_kernels_scalar,
  [BW_ISA_AVX2] = &bw_kernels_avx2,
  [BW_ISA_AVX512] = &bw_kernels_avx512,
  [BW_ISA_AVX512_VNNI] = &bw_kernels_avx512_vnni,
};

/* Where CPUID reports a feature, and the register state (XCR0 bits) the OS must save for
 * its instructions. */
typedef struct {
  const char *name;
  unsigned leaf;       /* 1 or 7 (subleaf 0) */
  int reg;             /* 1: EBX, 2: ECX */
  unsigned bit;
  unsigned xcr0;
} CpuFeature;

#define XCR0_AVX 0x6u       /* SSE and AVX state */
#define XCR0_AVX512 0xe6u   /* plus opmask and the upper ZMM registers */

static const CpuFeature cpu_features[] = {
  { "fma", 1, 2, 1u << 12, XCR0_AVX },
  { "f16c", 1, 2, 1u << 29, XCR0_AVX },
  { "avx2", 7, 1, 1u << 5, XCR0_AVX },
  { "avx512f", 7, 1, 1u << 16, XCR0_AVX512 },
  { "avx512dq", 7, 1, 1u << 17, XCR0_AVX512 },
  { "avx512bw", 7, 1, 1u << 30, XCR0_AVX512 },
  { "avx512vl", 7, 1, 1u << 31, XCR0_AVX512 },
  { "avx512vbmi", 7, 2, 1u << 1, XCR0_AVX512 },
  { "avx512vnni", 7, 2, 1u << 11, XCR0_AVX512 },
};

static unsigned
os_saved_state (void)
{
  unsigned a, b, c, d, lo, hi;

  /* OSXSAVE (leaf 1, ECX bit 27): XGETBV is there and the OS manages XCR0. */
  if (!__get_cpuid (1, &a, &b, &c, &d) || !(c & (1u << 27)))
    return 0;
  __asm__ ("xgetbv" : "=a" (lo), "=d" (hi) : "c" (0));
  return lo;
}

gboolean
bw_cpu_has (const char *name)
{
  unsigned r[4]; /* EAX EBX ECX EDX */

  for (gsize i = 0; i < G_N_ELEMENTS (cpu_features); i++)
    {
      const CpuFeature *f = &cpu_features[i];
      if (strcmp (f->name, name) != 0)
        continue;
      if (!__get_cpuid_count (f->leaf, 0, &r[0], &r[1], &r[2], &r[3]))
        return FALSE;
      return (r[f->reg] & f->bit) != 0 && (os_saved_state () & f->xcr0) == f->xcr0;
    }
  return FALSE; /* a feature this check does not know is one the CPU is not known to have */
}
#else
/* A scalar-only engine: no other level is built. */
static const BwKernelTable *const tables[BW_ISA_COUNT] = {
  [BW_ISA_SCALAR] = &bw_kernels_scalar,
};

gboolean
bw_cpu_has (const char *name)
{
  return FALSE;
}
#endif

const char *
bw_isa_name (BwIsa isa)
{
  return isa >= 0 && isa < BW_ISA_COUNT ? level_names[isa] : "?";
}

gboolean
bw_isa_from_name (const char *name, BwIsa *isa)
{
  for (int i = 0; i < BW_ISA_COUNT; i++)
    if (g_strcmp0 (name, level_names[i]) == 0)
      {
        *isa = (BwIsa) i;
        return TRUE;
      }
  return FALSE;
}

const char *const *
bw_isa_features (BwIsa isa)
{
  static const char *const none[] = { NULL };
  return isa > BW_ISA_SCALAR && isa < BW_ISA_COUNT ? level_features[isa] : none;
}

gboolean
bw_isa_supported (BwIsa isa)
{
  if (isa == BW_ISA_AUTO || isa == BW_ISA_SCALAR)
    return TRUE;
  if (isa < 0 || isa >= BW_ISA_COUNT || tables[isa] == NULL)
    return FALSE;
  for (const char *const *f = level_features[isa]; *f; f++)
    if (!bw_cpu_has (*f))
      return FALSE;
  return TRUE;
}

BwIsa
bw_isa_best (void)
{
  static gsize best; /* BwIsa + 1 once known */

  if (g_once_init_enter (&best))
    {
      int isa = BW_ISA_COUNT - 1;
      while (isa > BW_ISA_SCALAR && !bw_isa_supported ((BwIsa) isa))
        isa--;
      g_once_init_leave (&best, (gsize) isa + 1);
    }
  return (BwIsa) (best - 1);
}

BwIsa
bw_isa_resolve (BwIsa isa)
{
  BwIsa best = bw_isa_best ();
  return isa <= BW_ISA_AUTO || isa > best ? best : isa;
}

const BwKernelTable *
bw_kernels_table (BwIsa isa)
{
  return tables[bw_isa_resolve (isa)];
}

BwRowsKernel
bw_kernels_rows (const BwKernelTable *table, BwFormat fmt)
{
  for (const BwKernelTable *t = table; t; t = t->base)
    if (t->rows[fmt])
      return t->rows[fmt];
  return bw_kernels_scalar.rows[fmt];
}

BwRowsKernel
bw_kernels_matrix_rows (const BwKernelTable *table, const BwMatrix *w)
{
  if (w->act_bits == 32 && bw_ggml_format (w->fmt))
    return bw_ggml_f32act_rows;
  return bw_kernels_rows (table, w->fmt);
}

gboolean
bw_kernels_int_sums (BwIsa isa, BwFormat fmt, int group)
{
  const BwKernelTable *t = bw_kernels_table (isa);
  BwMatrix w = { .fmt = fmt, .group = group, .rows = 1, .cols = BW_GEMV_INT_BLOCK };
  return t->gemv_int != NULL && bw_gemv_int_applies (t->gemv_int, &w);
}

BwStreamSum
bw_kernels_stream_sum (const BwKernelTable *table)
{
  for (const BwKernelTable *t = table; t; t = t->base)
    if (t->stream_sum)
      return t->stream_sum;
  return bw_kernels_scalar.stream_sum;
}

BwPeakLoop
bw_kernels_peak (const BwKernelTable *table, gboolean integer)
{
  for (const BwKernelTable *t = table; t; t = t->base)
    if (integer ? t->peak_int != NULL : t->peak_fma != NULL)
      return integer ? t->peak_int : t->peak_fma;
  return integer ? bw_kernels_scalar.peak_int : bw_kernels_scalar.peak_fma;
}

const BwGgmlDots *
bw_kernels_ggml_dots (const BwKernelTable *table, BwFormat fmt)
{
  for (const BwKernelTable *t = table; t; t = t->base)
    if (t->ggml_dot && t->ggml_dot[fmt].one)
      return &t->ggml_dot[fmt];
  return &bw_kernels_scalar.ggml_dot[fmt];
}

BwGgmlBatch
bw_kernels_ggml_batch (const BwKernelTable *table, BwFormat fmt)
{
  for (const BwKernelTable *t = table; t; t = t->base)
    if (t->ggml_batch && t->ggml_batch[fmt])
      return t->ggml_batch[fmt];
  return NULL;
}

BwGgmlDot
bw_kernels_ggml_dot (const BwKernelTable *table, BwFormat fmt)
{
  return bw_kernels_ggml_dots (table, fmt)->one;
}

BwGgmlF32Dot
bw_kernels_ggml_f32_dot (const BwKernelTable *table, BwFormat fmt)
{
  for (const BwKernelTable *t = table; t; t = t->base)
    if (t->ggml_f32_dot && t->ggml_f32_dot[fmt])
      return t->ggml_f32_dot[fmt];
  return bw_kernels_scalar.ggml_f32_dot[fmt];
}
