#include "burrow-engine.h"

#include "convert/public-error.h"
#include "core/checkpoint.h"

void
bw_error_publish (GError **error)
{
  int code;

  if (error == NULL || *error == NULL || (*error)->domain != BW_CHECKPOINT_ERROR)
    return;
  switch ((BwCheckpointError) (*error)->code)
    {
    case BW_CHECKPOINT_ERROR_IO:
      code = BURROW_ENGINE_ERROR_IO;
      break;
    case BW_CHECKPOINT_ERROR_NOT_FOUND:
      code = BURROW_ENGINE_ERROR_NOT_FOUND;
      break;
    case BW_CHECKPOINT_ERROR_TRUNCATED:
      code = BURROW_ENGINE_ERROR_INCOMPLETE;
      break;
    case BW_CHECKPOINT_ERROR_FORMAT:
    case BW_CHECKPOINT_ERROR_CONFIG:
    case BW_CHECKPOINT_ERROR_UNSUPPORTED:
    default:
      code = BURROW_ENGINE_ERROR_INVALID_INPUT;
      break;
    }
  (*error)->domain = BURROW_ENGINE_ERROR;
  (*error)->code = code;
}
