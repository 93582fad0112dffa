#!/usr/bin/python3
"""The peer of configs/char-lm.yaml: the same character-level language model
in PyTorch (Embedding 64, LSTM 256 returning every step, Linear to the
vocabulary at every step), on the same text, windows and held-out end, for
the same number of optimizer steps (Adam, lr 0.002, the gradient's global
norm clipped to 5, batches of 32 shuffled every epoch, the last partial).

  bench_charlm_torch.py [--epochs N] [--threads K] [--seed S] FILE...

--threads: torch's intra-op threads, default 1: its cheapest in CPU time
(on 2 cores shared with other jobs, 2 threads spent about 14 times the CPU
seconds of 1 on the same LSTM forward: the waiting thread spins).

FILE...: the training text's files in order (configs/char-lm.yaml's
data.train.files). The text is cut as akkctl cuts it (data/text.h): the
vocabulary is its distinct bytes, sorted; window i reads bytes 100 i ..
100 i + 99 and predicts the byte after each; the last round(0.05 n)
windows are held out and the training keeps those that end before the
first held-out one begins (data/series.h, akk_windows_split).

Prints one line per epoch: "epoch E train_loss L val_loss V val_bpc B
cpu_s C wall_s W" (loss: the mean cross-entropy per step in nats; bpc = V /
ln 2; cpu_s: the process's CPU seconds of the epoch's training steps, its
threads summed; the held-out pass is timed apart, in eval_cpu_s). Needs
python3-torch (sh datasets/deps.sh peers)."""
import argparse
import math
import os
import sys
import time

SEQ, HID, EMB, LR, CLIP, BS, SPLIT = 100, 256, 64, 0.002, 5.0, 32, 0.05


def windows(text, seq, stride):
    """The windows of text as akkctl cuts them: inputs and next bytes."""
    import torch
    vocab = sorted(set(text))
    tok = {b: k for k, b in enumerate(vocab)}
    ids = torch.tensor([tok[b] for b in text], dtype=torch.long)
    n = (len(text) - seq - 1) // stride + 1
    starts = torch.arange(n) * stride
    idx = starts[:, None] + torch.arange(seq)[None, :]
    return ids[idx], ids[idx + 1], len(vocab)


def split(n, span, stride, fraction):
    """akk_windows_split: held-out windows and the training windows before."""
    k = max(1, int(math.floor(fraction * n + 0.5)))
    first = n - k
    gap = (span + stride - 1) // stride
    return list(range(first - gap + 1)), list(range(first, n))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--epochs', type=int, default=10)
    ap.add_argument('--threads', type=int, default=1)
    ap.add_argument('--seed', type=int, default=42)
    ap.add_argument('files', nargs='+')
    a = ap.parse_args()
    for v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):
        os.environ[v] = str(a.threads)  # before torch is imported
    import torch
    import torch.nn.functional as F
    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)

    text = b''.join(open(f, 'rb').read() for f in a.files)
    x, y, V = windows(text, SEQ, SEQ)
    keep, held = split(len(x), SEQ + 1, SEQ, SPLIT)
    xt, yt, xv, yv = x[keep], y[keep], x[held], y[held]

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(V, EMB)
            self.lstm = torch.nn.LSTM(EMB, HID, batch_first=True)
            self.out = torch.nn.Linear(HID, V)

        def forward(self, ids):
            h, _ = self.lstm(self.emb(ids))
            return self.out(h)

    m = Model()
    opt = torch.optim.Adam(m.parameters(), lr=LR)
    print(f"torch {torch.__version__}, {a.threads} threads: {len(text)} bytes, "
          f"vocabulary {V}, {len(keep)} training / {len(held)} held-out windows of {SEQ}",
          flush=True)
    for epoch in range(1, a.epochs + 1):
        m.train()
        perm = torch.randperm(len(xt))
        total, w0, c0 = 0.0, time.perf_counter(), time.process_time()
        for s in range(0, len(xt), BS):
            b = perm[s:s + BS]
            opt.zero_grad(set_to_none=True)
            z = m(xt[b])
            loss = F.cross_entropy(z.reshape(-1, V), yt[b].reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), CLIP)
            opt.step()
            total += loss.item() * len(b)
        cpu, wall = time.process_time() - c0, time.perf_counter() - w0
        m.eval()
        c1 = time.process_time()
        with torch.no_grad():
            vl = sum(F.cross_entropy(m(xv[s:s + BS]).reshape(-1, V),
                                     yv[s:s + BS].reshape(-1), reduction='sum').item()
                     for s in range(0, len(xv), BS)) / (len(xv) * SEQ)
        print(f"epoch {epoch} train_loss {total / len(xt):.6f} val_loss {vl:.6f} "
              f"val_bpc {vl / math.log(2):.4f} cpu_s {cpu:.2f} wall_s {wall:.2f} "
              f"eval_cpu_s {time.process_time() - c1:.2f}", flush=True)


if __name__ == '__main__':
    sys.exit(main())
