/**
 * @file attn.h
 * @brief The whole harness in one include.
 */
#ifndef ATTN_H
#define ATTN_H

#include "attn_bf16.h"
#include "attn_cli.h"
#include "attn_device.h"
#include "attn_paged.h"
#include "attn_reference.h"
#include "attn_rng.h"
#include "attn_runner.h"
#include "attn_timer.h"
#include "attn_types.h"
#include "attn_verify.h"

#endif /* ATTN_H */
