/* Run-time sizes of scaled dot-product attention, shared by the host packer and the generated
   kernels. q [b, h, sq, d], k [b, hkv, skv, d], v [b, hkv, skv, dv], an optional bias broadcast to
   [b, h, sq, skv] (stride 0 on broadcast dims), o [b, h, sq, dv], stats [b, h, sq, 1]. */
#ifndef SINTER_KERNELS_SDPA_ABI_H
#define SINTER_KERNELS_SDPA_ABI_H

struct SinterSdpaShape {
  long long batch, heads, kv_heads, sq, skv, d, dv;
  long long group;          /* heads / kv_heads: query head h reads kv head h / group */
  long long causal_offset;  /* key j is visible to query i when j <= i + causal_offset */
  long long q_stride[4], k_stride[4], v_stride[4], bias_stride[4];
  float scale;
  int ld;  /* shared-memory row length (floats) of the q and k tiles: d rounded up to 8, plus 4 */
};

#endif
