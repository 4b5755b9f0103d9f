/* Small f32 vector loops for the blocks' inner loops (attention state updates, the KDA
 * recurrence). Written with GCC vector extensions because -O2 leaves loops of unknown length
 * scalar; the baseline ISA (SSE2) is enough for 4-wide arithmetic. Matrix products belong
 * in kernels/, not here. */
#pragma once

#include <string.h>

typedef float BwV4 __attribute__ ((vector_size (16)));

static inline BwV4
bw_v4_load (const float *p)
{
  BwV4 v;
  memcpy (&v, p, sizeof v);
  return v;
}

static inline void
bw_v4_store (float *p, BwV4 v)
{
  memcpy (p, &v, sizeof v);
}

/* y += a x */
static inline void
bw_vec_axpy (float *restrict y, const float *restrict x, float a, int n)
{
  BwV4 va = { a, a, a, a };
  int i = 0;
  for (; i + 8 <= n; i += 8)
    {
      bw_v4_store (y + i, bw_v4_load (y + i) + va * bw_v4_load (x + i));
      bw_v4_store (y + i + 4, bw_v4_load (y + i + 4) + va * bw_v4_load (x + i + 4));
    }
  for (; i < n; i++)
    y[i] += a * x[i];
}

/* y *= a */
static inline void
bw_vec_scale (float *y, float a, int n)
{
  BwV4 va = { a, a, a, a };
  int i = 0;
  for (; i + 4 <= n; i += 4)
    bw_v4_store (y + i, bw_v4_load (y + i) * va);
  for (; i < n; i++)
    y[i] *= a;
}

/* sum a[i] b[i], with four lanes of two accumulators. */
static inline float
bw_vec_dot (const float *a, const float *b, int n)
{
  BwV4 s0 = { 0, 0, 0, 0 }, s1 = s0;
  int i = 0;
  for (; i + 8 <= n; i += 8)
    {
      s0 += bw_v4_load (a + i) * bw_v4_load (b + i);
      s1 += bw_v4_load (a + i + 4) * bw_v4_load (b + i + 4);
    }
  s0 += s1;
  float s = (s0[0] + s0[1]) + (s0[2] + s0[3]);
  for (; i < n; i++)
    s += a[i] * b[i];
  return s;
}
