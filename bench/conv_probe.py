# How fast can cuDNN run the Wan2.2-5B VAE decoder's causal 3-D convolutions in bf16 (NDHWC), through torch
# (cuDNN frontend, heuristic vs benchmark=True autotuning)? Per geometry: frames_in -> frames_in - 2 output frames.
import json
import torch
import torch.nn.functional as F
from torch_timing import median_event_ms as bench  # bench/torch_timing.py, beside this script
# (cin, cout, kt, k, frames_in, H, W)
geoms = [(1024, 1024, 3, 3, 3, 44, 80), (1024, 1024, 3, 3, 6, 88, 160), (1024, 512, 3, 3, 6, 176, 320),
         (512, 512, 3, 3, 6, 176, 320), (512, 256, 3, 3, 6, 352, 640), (256, 256, 3, 3, 6, 352, 640),
         (512, 512, 1, 3, 4, 352, 640), (1024, 1024, 1, 3, 4, 176, 320), (256, 12, 3, 3, 6, 352, 640)]
print(torch.__version__, torch.backends.cudnn.version(), flush=True)
rows = []
for bm in (False, True):
    torch.backends.cudnn.benchmark = bm
    for (cin, cout, kt, k, T, H, W) in geoms:
        x = torch.randn(1, cin, T, H, W, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last_3d)
        w = torch.randn(cout, cin, kt, k, k, device="cuda", dtype=torch.bfloat16).to(memory_format=torch.channels_last_3d) * 0.01
        fn = lambda: F.conv3d(x, w, padding=(0, k // 2, k // 2))
        t = bench(fn)
        flops = 2 * cin * cout * kt * k * k * (T - kt + 1) * H * W
        r = {"benchmark": bm, "geom": [cin, cout, kt, k, T, H, W], "ms": t, "tflops": flops / t / 1e9}
        rows.append(r); print(json.dumps(r), flush=True)
