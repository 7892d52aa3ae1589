# The timing of dattn's torch-side bench scripts (conv_probe.py, sageattention2_anchor.py): CUDA events around
# each call, `warm` untimed calls first, the median of `iters` in milliseconds.
import torch


def median_event_ms(fn, iters=20, warm=5):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]
