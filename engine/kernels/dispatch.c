/* Kernel selection from CPU features. */
#include "kernels/dispatch.h"
#include "kernels/gemv-int.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>

/* CPUID leaf 1, ECX bit 29; clang 14's __builtin_cpu_supports does not know "f16c" */
static gboolean
cpu_has_f16c (void)
{
  unsigned int a, b, c, d;
  return __get_cpuid (1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
#endif

static const BwKernelTable *const tables[BW_ISA_COUNT] = {
  [BW_ISA_SCALAR] = &bw_kernels_scalar,
  [BW_ISA_AVX2] = &bw_kernels_avx2,
  [BW_ISA_AVX512] = &bw_kernels_avx512,
};

static int active_isa; /* BwIsa; 0 until first use */

const char *
bw_isa_name (BwIsa isa)
{
  switch (isa)
    {
    case BW_ISA_AUTO: return "auto";
    case BW_ISA_SCALAR: return "scalar";
    case BW_ISA_AVX2: return "avx2";
    case BW_ISA_AVX512: return "avx512";
    case BW_ISA_COUNT:
    default: return "?";
    }
}

gboolean
bw_isa_supported (BwIsa isa)
{
  switch (isa)
    {
    case BW_ISA_AUTO:
    case BW_ISA_SCALAR:
      return TRUE;
#if defined(__x86_64__) || defined(__i386__)
    case BW_ISA_AVX2:
      return __builtin_cpu_supports ("avx2") && __builtin_cpu_supports ("fma")
             && cpu_has_f16c ();
    case BW_ISA_AVX512:
      return __builtin_cpu_supports ("avx512f") && __builtin_cpu_supports ("avx512bw")
             && __builtin_cpu_supports ("avx512vl") && cpu_has_f16c ()
             && __builtin_cpu_supports ("fma");
#endif
    case BW_ISA_COUNT:
    default:
      return FALSE;
    }
}

static BwIsa
best_isa (void)
{
  for (int isa = BW_ISA_COUNT - 1; isa > BW_ISA_SCALAR; isa--)
    if (bw_isa_supported ((BwIsa) isa))
      return (BwIsa) isa;
  return BW_ISA_SCALAR;
}

gboolean
bw_kernels_force_isa (BwIsa isa)
{
  if (isa < 0 || isa >= BW_ISA_COUNT || !bw_isa_supported (isa))
    return FALSE;
  g_atomic_int_set (&active_isa, isa == BW_ISA_AUTO ? best_isa () : isa);
  return TRUE;
}

BwIsa
bw_kernels_isa (void)
{
  int isa = g_atomic_int_get (&active_isa);

  if (G_UNLIKELY (isa == BW_ISA_AUTO))
    {
      isa = best_isa ();
      g_atomic_int_set (&active_isa, isa);
    }
  return (BwIsa) isa;
}

BwRowsKernel
bw_kernels_get (BwFormat fmt)
{
  BwRowsKernel k = tables[bw_kernels_isa ()]->rows[fmt];

  return k ? k : bw_kernels_scalar.rows[fmt];
}

BwStreamSum
bw_kernels_stream_sum (void)
{
  return tables[bw_kernels_isa ()]->stream_sum;
}

/* Asked for every 4-bit product, so answered once. */
gboolean
bw_gemv_int_supported (void)
{
  static gsize answer; /* 0 until known, then 1 (no) or 2 (yes) */

  if (g_once_init_enter (&answer))
    {
      gboolean yes = FALSE;
#if defined(__x86_64__)
      yes = bw_isa_supported (BW_ISA_AVX512) && __builtin_cpu_supports ("avx512dq")
            && __builtin_cpu_supports ("avx512vnni") && __builtin_cpu_supports ("avx512vbmi");
#endif
      g_once_init_leave (&answer, yes ? 2 : 1);
    }
  return answer == 2;
}

static int gemv_int_off; /* set by bw_gemv_int_set_enabled (FALSE) */

void
bw_gemv_int_set_enabled (gboolean enabled)
{
  g_atomic_int_set (&gemv_int_off, !enabled);
}

gboolean
bw_gemv_int_enabled (void)
{
  return !g_atomic_int_get (&gemv_int_off) && bw_kernels_isa () == BW_ISA_AVX512
         && bw_gemv_int_supported ();
}
