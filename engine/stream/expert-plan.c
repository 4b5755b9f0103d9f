/* Read plans for one expert: sort its tensors by (shard, offset) and coalesce. */
#include "stream/expert-plan.h"

const BwTensorInfo *
bw_expert_layout_tensor (const BwExpertLayout *l, int k)
{
  const BwExpertTensor *t = k < 2 ? &l->gate : k < 4 ? &l->up : &l->down;
  return (k & 1) ? t->scales : t->data;
}

guint64
bw_expert_layout_bytes (const BwExpertLayout *l)
{
  guint64 sum = 0;
  for (int k = 0; k < BW_EXPERT_TENSORS; k++)
    {
      const BwTensorInfo *t = bw_expert_layout_tensor (l, k);
      if (t != NULL)
        sum += t->nbytes;
    }
  return sum;
}

static gboolean
tensor_before (const BwTensorInfo *a, const BwTensorInfo *b)
{
  return a->shard < b->shard || (a->shard == b->shard && a->offset < b->offset);
}

gboolean
bw_expert_plan_build (const BwExpertLayout *l, guint64 align, BwExpertPlan *plan)
{
  int order[BW_EXPERT_TENSORS];
  int n = 0;
  gsize pos = 0;

  plan->n_runs = 0;
  plan->buf_bytes = 0;
  for (int k = 0; k < BW_EXPERT_TENSORS; k++)
    plan->tensor_off[k] = BW_PLAN_ABSENT;
  if (l->gate.data == NULL)
    return FALSE;
  if (align == 0)
    align = 1;

  /* Insertion sort of at most six tensors by (shard, offset). */
  for (int k = 0; k < BW_EXPERT_TENSORS; k++)
    {
      const BwTensorInfo *t = bw_expert_layout_tensor (l, k);
      int j = n;
      if (t == NULL)
        continue;
      while (j > 0 && tensor_before (t, bw_expert_layout_tensor (l, order[j - 1])))
        {
          order[j] = order[j - 1];
          j--;
        }
      order[j] = k;
      n++;
    }

  for (int i = 0; i < n; i++)
    {
      const BwTensorInfo *t = bw_expert_layout_tensor (l, order[i]);
      guint64 start = t->offset / align * align;
      guint64 end = t->offset + t->nbytes;
      guint64 aend = (end + align - 1) / align * align;
      BwReadRun *run = plan->n_runs > 0 ? &plan->runs[plan->n_runs - 1] : NULL;

      if (run != NULL && run->shard == t->shard && start <= run->file_off + run->len)
        {
          /* Touches the previous read: extend it. */
          if (aend > run->file_off + run->len)
            run->len = aend - run->file_off;
          if (end - run->file_off > run->need)
            run->need = end - run->file_off;
        }
      else
        {
          if (run != NULL)
            pos += (gsize) run->len;
          pos = (pos + BW_PLAN_BUF_ALIGN - 1) / BW_PLAN_BUF_ALIGN * BW_PLAN_BUF_ALIGN;
          run = &plan->runs[plan->n_runs++];
          run->shard = t->shard;
          run->file_off = start;
          run->len = aend - start;
          run->need = end - start;
          run->buf_off = pos;
          run->first_tensor = order[i];
        }
      plan->tensor_off[order[i]] = run->buf_off + (gsize) (t->offset - run->file_off);
    }
  if (plan->n_runs > 0)
    {
      const BwReadRun *last = &plan->runs[plan->n_runs - 1];
      plan->buf_bytes = last->buf_off + (gsize) last->len;
    }
  return TRUE;
}
