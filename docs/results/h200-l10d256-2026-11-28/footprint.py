#!/usr/bin/env python3
"""Versions 1 (bf16 cache) and 2 (FP8 cache) at one step, with both caches allocated (as the bench
holds them) and each alone: does the second cache's footprint slow the other? lib dim batch skv t"""
import argparse, ctypes, math, statistics, sys, torch
sys.path.insert(0, "bench")
import lesson10_peers as bl
from peer_timing import L2Flush, timings
lib = bl.load_lib(sys.argv[1]); why = bl.fp8_symbols(lib); assert not why, why
dim, batch, skv, t = (int(x) for x in sys.argv[2:6])
heads, hkv, bs = 32, 8, 16
stream = torch.cuda.current_stream().cuda_stream
env = argparse.Namespace(lib=lib, stream=stream)
lens = [skv] * batch; seed = batch * 1000003 + hkv * 1009 + skv + dim
def pools():
    g = torch.Generator(device="cuda").manual_seed(seed)
    k = torch.randn(batch, skv, hkv, dim, device="cuda", dtype=torch.bfloat16, generator=g)
    v = torch.randn(batch, skv, hkv, dim, device="cuda", dtype=torch.bfloat16, generator=g)
    r = bl.make_pools(k, v, lens, bs, seed * 131 + bs); del k, v; torch.cuda.empty_cache(); return r
pool_k, pool_v, table, max_blocks = pools()
f8 = bl.fp8_pools(env, pool_k, pool_v)
q = torch.randn(batch * t, heads, dim, device="cuda", dtype=torch.bfloat16)
o = torch.empty_like(q); lse = torch.empty(batch * t * heads, device="cuda")
q_start = torch.arange(batch, device="cuda", dtype=torch.int32) * t
q_lens = torch.full((batch,), t, device="cuda", dtype=torch.int32)
lens_dev = torch.tensor(lens, device="cuda", dtype=torch.int32)
keep = []
def make(kc, vc, ks, vs, fname):
    st = bl.L10Step(q=q.data_ptr(), q_start=q_start.data_ptr(), q_lens=q_lens.data_ptr(), tree=None,
                    k_cache=kc, v_cache=vc, block_table=table.data_ptr(), seq_lens=lens_dev.data_ptr(),
                    batch=batch, heads=heads, kv_heads=hkv, dim=dim, max_q=t, max_seq_kv=skv,
                    max_blocks=max_blocks, block_size=bs, mask=1, scale=1 / math.sqrt(dim),
                    k_scale=ks, v_scale=vs)
    n = lib.l10_draft_workspace_bytes(ctypes.byref(st)); ws = torch.zeros(max(n, 1), dtype=torch.uint8, device="cuda")
    fn = getattr(lib, fname); keep.append((st, ws))
    def run(): assert fn(ctypes.byref(st), o.data_ptr(), lse.data_ptr(), ws.data_ptr(), n, stream) == 0
    return run
flush = L2Flush()
b16 = 2 * sum(lens) * hkv * dim * 2; b8 = 2 * sum(lens) * hkv * (dim + 4)
def med(fn, rounds=3): return statistics.median(timings(fn, flush, 20, 3)[0] for _ in range(rounds))
v1 = make(pool_k.data_ptr(), pool_v.data_ptr(), None, None, f"l10_draft_d{dim}")
v2 = make(f8.k8.data_ptr(), f8.v8.data_ptr(), f8.k_scale.data_ptr(), f8.v_scale.data_ptr(), f"l10_fp8_d{dim}")
both1, both2 = med(v1), med(v2)
print(f"dim {dim} batch {batch} kv {skv} tokens {t}, both caches ({(pool_k.numel() * 4 + f8.k8.numel() * 2) / 1e9:.2f} GB): "
      f"v1 {both1 * 1e3:.1f} us {b16 / both1 / 1e6:.0f} GB/s; v2 {both2 * 1e3:.1f} us {b8 / both2 / 1e6:.0f} GB/s; v2 speed over v1 {both1 / both2:.3f}x", flush=True)
keep.clear(); del v1, pool_k, pool_v; torch.cuda.synchronize(); torch.cuda.empty_cache()
v2 = make(f8.k8.data_ptr(), f8.v8.data_ptr(), f8.k_scale.data_ptr(), f8.v_scale.data_ptr(), f"l10_fp8_d{dim}")
alone2 = med(v2)
keep.clear(); del v2, f8; torch.cuda.synchronize(); torch.cuda.empty_cache()
pool_k, pool_v, table, max_blocks = pools()
v1 = make(pool_k.data_ptr(), pool_v.data_ptr(), None, None, f"l10_draft_d{dim}")
alone1 = med(v1)
print(f"  each cache alone: v1 {alone1 * 1e3:.1f} us {b16 / alone1 / 1e6:.0f} GB/s; v2 {alone2 * 1e3:.1f} us {b8 / alone2 / 1e6:.0f} GB/s; "
      f"v2 speed over v1 {alone1 / alone2:.3f}x; alone over both: v1 {both1 / alone1:.3f}x, v2 {both2 / alone2:.3f}x", flush=True)
