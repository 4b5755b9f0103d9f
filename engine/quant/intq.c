/* Symmetric int8/int4/int2 quantisation. */
#include <glib.h>
#include <math.h>

#include "quant/intq.h"

void
bw_intq_put (int bits, uint8_t *row, int64_t c, int q)
{
  switch (bits)
    {
    case 8:
      row[c] = (uint8_t) (int8_t) q;
      break;
    case 4:
      {
        int sh = (int) (c & 1) * 4;
        row[c >> 1] = (uint8_t) ((row[c >> 1] & ~(0xFu << sh)) | ((unsigned) (q + 8) << sh));
        break;
      }
    default:
      {
        int sh = (int) (c & 3) * 2;
        row[c >> 2] = (uint8_t) ((row[c >> 2] & ~(0x3u << sh)) | ((unsigned) (q + 2) << sh));
        break;
      }
    }
}

void
bw_intq_quantize (int bits, const float *w, int64_t rows, int64_t cols, int group,
                  uint8_t *packed, float *scales)
{
  int64_t rb = bw_intq_row_bytes (bits, cols), ns = bw_intq_row_scales (cols, group);
  int64_t gsz = group > 0 ? group : cols;
  int qmax = bw_intq_qmax (bits), qmin = -qmax - 1;

  for (int64_t r = 0; r < rows; r++)
    {
      const float *row = w + r * cols;
      uint8_t *out = packed + r * rb;

      /* Padding fields hold code 0 (value+offset), not raw zero bits. */
      for (int64_t c = 0; c < rb * 8 / bits; c++)
        bw_intq_put (bits, out, c, 0);
      for (int64_t g = 0; g < ns; g++)
        {
          int64_t c0 = g * gsz, c1 = MIN (cols, c0 + gsz);
          float amax = 0.0f;

          for (int64_t c = c0; c < c1; c++)
            amax = fmaxf (amax, fabsf (row[c]));
          float scale = amax / (float) qmax;
          scales[r * ns + g] = scale;
          for (int64_t c = c0; c < c1; c++)
            {
              /* NaN or infinite weights (or an infinite scale) become 0, not an
               * out-of-range conversion */
              float v = scale > 0.0f ? rintf (row[c] / scale) : 0.0f;
              int q = isfinite (v) ? (int) CLAMP (v, qmin, qmax) : 0;
              bw_intq_put (bits, out, c, q);
            }
        }
    }
}
