#!/usr/bin/python3
"""The peer of tests/bench_lstm.c: one training step of PyTorch's nn.LSTM
(forward of a batch, the loss sum(h_T r), backward: weight, bias and input
gradients) on one thread, in CPU seconds of the process.

  bench_lstm_torch.py B T F H ITERS

Prints the mean milliseconds a step over ITERS steps (after 3 warm-up
steps) on one line: "torch ms_per_step". Needs python3-torch
(sh datasets/deps.sh peers)."""
import os
import sys
import time

for v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ[v] = '1'  # before torch is imported
import torch  # noqa: E402


def main():
    if len(sys.argv) != 6:
        sys.exit('usage: bench_lstm_torch.py B T F H ITERS')
    B, T, F, H, iters = (int(a) for a in sys.argv[1:])
    torch.set_num_threads(1)
    torch.manual_seed(1)
    lstm = torch.nn.LSTM(F, H, batch_first=True)
    x = torch.rand(B, T, F, requires_grad=True)
    r = torch.rand(B, H)

    def step():
        lstm.zero_grad(set_to_none=False)
        x.grad = None
        out, _ = lstm(x)
        (out[:, -1, :] * r).sum().backward()

    for _ in range(3):
        step()
    t0 = time.process_time()
    for _ in range(iters):
        step()
    print(f"torch {1000 * (time.process_time() - t0) / iters:.4f}")


main()
