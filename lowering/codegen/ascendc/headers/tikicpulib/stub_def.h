// Declarations, no definitions: what CANN's private tikicpulib `stub_def.h` provides to the
// AscendC headers in CPU-debug mode -- the address-space and kernel qualifiers (empty on a
// host compiler), the half/bfloat16_t/fp8 storage types, block_idx/block_num, and the
// hardware enums. Used only by dslc's type-check tests; it holds no semantics.
#pragma once
#include <cstdint>
#include <cstddef>
#define __global__
#define __aicore__
#define __gm__
#define __ubuf__
#define __cbuf__
#define __ca__
#define __cb__
#define __cc__
#define __fbuf__
#define __biasbuf__
#define __ssbuf__
#define __simd_callee__
#define __simd_vf__
#define __simt_gm__
#define __in_pipe__(...)
#define __out_pipe__(...)
#define __inout_pipe__(...)
#define __sync_noalias__
#define __sync_alias__
#define __check_sync_alias__
#define __callee__
#define __no_simd_vf_fusion__
#define __host_aicore__
#define __disable_kernel_type_autoinfer__
#define __vector__
#define __cube__
#define __mix__(...)

struct half { half(); half(float); operator float() const; float ToFloat() const; };
struct bfloat16_t { bfloat16_t(); bfloat16_t(float); operator float() const; float ToFloat() const; };
struct fp4x2_e1m2_t { fp4x2_e1m2_t(); };
struct fp4x2_e2m1_t { fp4x2_e2m1_t(); };
struct fp8_e4m3fn_t { fp8_e4m3fn_t(); fp8_e4m3fn_t(float); operator float() const; };
struct fp8_e5m2_t { fp8_e5m2_t(); fp8_e5m2_t(float); operator float() const; };
struct fp8_e8m0_t { fp8_e8m0_t(); fp8_e8m0_t(float); operator float() const; };
struct hifloat8_t { hifloat8_t(); hifloat8_t(float); operator float() const; };

enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_MTE4, PIPE_MTE5, PIPE_V2, PIPE_FIX, PIPE_NUM };
enum event_t { EVENT_ID0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

extern int64_t block_idx;
extern int64_t block_num;
extern int64_t sub_block_idx;
namespace AscendC {
constexpr int32_t AIC_TYPE = 1;
constexpr int32_t AIV_TYPE = 2;
constexpr int32_t MIX_TYPE = 3;
}
#define ASCENDC_HOST_AICORE
#include <vector>
#include <iostream>
#include <string>
#include <cassert>
#include <cstring>
struct vector_bool {};
struct vector_align {};
struct vector_address {};
#define __BLOCK_LOCAL__
#define __WORKGROUP_LOCAL__
enum class QuantMode_t { NoQuant, F322F16, F322BF16, DEQF16, VDEQF16, DEQS16, VDEQS16, QF162B8_PRE, VQF162B8_PRE, QF162S16_PRE, VQF162S16_PRE, QF162S4_PRE, VQF162S4_PRE, QF322B8_PRE, VQF322B8_PRE, QF322BF16_PRE, VQF322BF16_PRE, QF322F16_PRE, VQF322F16_PRE, QF322F32_PRE, VQF322F32_PRE, QF322FP8_PRE, VQF322FP8_PRE, QF322HIF8_PRE, VQF322HIF8_PRE, QF322HIF8_PRE_HYBRID, VQF322HIF8_PRE_HYBRID, QS322BF16_PRE, VQS322BF16_PRE, REQ4, VREQ4, REQ8, VREQ8 };
enum class dcci_dst_t { CACHELINE_ALL, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
enum class cache_line_t { SINGLE_CACHE_LINE, ENTIRE_DATA_CACHE };
enum class Order_t { VALUE_INDEX, INDEX_VALUE, ONLY_VALUE, ONLY_INDEX };
enum addr_cal_mode_t { inc, dec };
enum class pad_t { PAD_NONE, PAD_MODE1, PAD_MODE2, PAD_MODE3, PAD_MODE4, PAD_MODE5, PAD_MODE6, PAD_MODE7, PAD_MODE8 };
enum class ROUND { R, A, F, C, Z, O, H, CAST_RINT, CAST_ROUND, CAST_FLOOR, CAST_CEIL, CAST_TRUNC, CAST_ODD, CAST_HYBRID };
enum ub_addr8_t { VA0, VA1, VA2, VA3, VA4, VA5, VA6, VA7 };
enum atomic_type_t : int {};
enum atomic_op_t : int {};
enum mem_t : int {};
enum mem_dsb_t : int {};
extern uint64_t g_fixpipeNdNzParam;
extern int64_t g_taskRation;
constexpr uint64_t H128 = 0;
constexpr uint64_t L128 = 1;
#define __host__
namespace AscendC { extern bool g_isVdeq; }
