"""cuDNN's SDPA backward once, inside a profiler range (ncu --profile-from-start off)."""
import sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
b, h, s, d, causal = (int(x) for x in sys.argv[1:6])
g = torch.Generator(device="cuda").manual_seed(1)
q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g).requires_grad_() for _ in range(3))
do = torch.randn(b, h, s, d, device="cuda", dtype=torch.bfloat16, generator=g)
with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
    for _ in range(2):
        o = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
        o.backward(do)
    torch.cuda.synchronize()
    o = F.scaled_dot_product_attention(q, k, v, is_causal=bool(causal))
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    o.backward(do)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
print("done", torch.backends.cudnn.version())
