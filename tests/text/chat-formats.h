/* The registered families' chat formats, by the names the tests use. */
#pragma once

#include "families/family.h"
#include "text/chat-template.h"

#define BW_CHAT_KIMI_LINEAR (bw_family_by_name ("kimi_linear")->chat)
#define BW_CHAT_KIMI_K3 (bw_family_by_name ("kimi_k3")->chat)
#define BW_CHAT_GLM (bw_family_by_name ("glm_moe_dsa")->chat)
#define BW_CHAT_GPT_OSS (bw_family_by_name ("gpt_oss")->chat)
