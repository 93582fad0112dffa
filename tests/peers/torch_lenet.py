#!/usr/bin/python3
"""Peer baseline: configs/lenet.yaml's LeNet in PyTorch (CPU), for tests/bench_peers.sh.

The same network, optimizer, learning rate, batch and data as configs/lenet.yaml:
input 1x28x28 scaled to [0,1] then normalized (mean 0.1307, std 0.3081); conv 6@5x5 pad 2, relu,
maxpool 2; conv 16@5x5, relu, maxpool 2; flatten (400); dense 120, relu, dense 84, relu, dense 10;
softmax cross-entropy; Adam lr 1e-3 (constant: the bench runs akkctl with optimizer.schedule=constant);
batch 64, a fresh shuffle every epoch, the last partial batch included. MNIST is read from the IDX
files with numpy (no torchvision).
Same options and CSV output as ../shared/peers/torch_mlp.py (--data, --epochs, --threads, --seed, --ftz),
plus --max-batches N: train only the first N batches of each epoch; train_seconds is then the time of
those batches scaled to a full epoch (per-epoch normalised, as `akkctl bench --steps`), and train_loss
the mean over the batches trained. A first and a last batch loss go to '#' lines so a broken peer shows."""
import argparse, gzip, math, os, struct, sys, time

p = argparse.ArgumentParser()
p.add_argument('--data', required=True, help='dir with {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]')
p.add_argument('--lr', type=float, default=0.001)
p.add_argument('--batch', type=int, default=64)
p.add_argument('--epochs', type=int, default=10)
p.add_argument('--max-batches', type=int, default=0, help='train at most N batches per epoch (0: all)')
p.add_argument('--threads', type=int, default=1)
p.add_argument('--seed', type=int, default=1)
p.add_argument('--no-eval', action='store_true', help='skip the test-set pass after each epoch')
p.add_argument('--ftz', action='store_true', help='flush denormals to zero (torch.set_flush_denormal)')
a = p.parse_args()
for v in ('OMP_NUM_THREADS', 'OPENBLAS_NUM_THREADS', 'MKL_NUM_THREADS'):  # must precede numpy/torch import
    os.environ.setdefault(v, str(a.threads))
import numpy as np, torch
import torch.nn as nn
import torch.nn.functional as F

MEAN, STD = 0.1307, 0.3081

def read_idx(d, name):
    path = os.path.join(d, name)
    raw = open(path, 'rb').read() if os.path.exists(path) else gzip.open(path + '.gz', 'rb').read()
    ndim = raw[3]
    dims = struct.unpack('>' + 'I' * ndim, raw[4:4 + 4 * ndim])
    return np.frombuffer(raw, np.uint8, offset=4 + 4 * ndim).reshape(dims)

def load(d, split):
    x = read_idx(d, f'{split}-images-idx3-ubyte').reshape(-1, 1, 28, 28).astype(np.float32)
    x = (x / np.float32(255) - np.float32(MEAN)) / np.float32(STD)
    y = read_idx(d, f'{split}-labels-idx1-ubyte').astype(np.int64)
    return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y)

torch.set_num_threads(a.threads)
if a.ftz:
    torch.set_flush_denormal(True)
torch.manual_seed(a.seed)
xtr, ytr = load(a.data, 'train')
xte, yte = load(a.data, 't10k')
model = nn.Sequential(
    nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),      # gate 1: 6x28x28 -> 6x14x14
    nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),  # gate 2: 16x10x10 -> 400
    nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(), nn.Linear(84, 10))  # gate 3
opt = torch.optim.Adam(model.parameters(), lr=a.lr)
n = xtr.shape[0]
per_epoch = math.ceil(n / a.batch)
steps = min(a.max_batches, per_epoch) if a.max_batches > 0 else per_epoch
print(f'# torch {torch.__version__} numpy {np.__version__} threads={torch.get_num_threads()} '
      f'env OMP={os.environ.get("OMP_NUM_THREADS")} OPENBLAS={os.environ.get("OPENBLAS_NUM_THREADS")} '
      f'OPENBLAS_CORETYPE={os.environ.get("OPENBLAS_CORETYPE")}')
print(f'# {vars(a)} train={n} test={xte.shape[0]} batches per epoch {steps} of {per_epoch}'
      f'{" (train_seconds scaled to a full epoch)" if steps < per_epoch else ""}')
print('epoch,train_loss,test_loss,test_acc,train_seconds,eval_seconds,samples_per_second', flush=True)
gen = torch.Generator().manual_seed(a.seed)
first = last = None
for ep in range(1, a.epochs + 1):
    model.train()
    t0 = time.perf_counter()
    perm = torch.randperm(n, generator=gen)
    loss_sum = torch.zeros(())
    seen = 0
    for k in range(steps):                  # the last partial batch included when all are trained
        idx = perm[k * a.batch:(k + 1) * a.batch]
        loss = F.cross_entropy(model(xtr[idx]), ytr[idx])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss_sum += loss.detach() * len(idx)
        seen += len(idx)
        if first is None:
            first = loss.item()
    t1 = time.perf_counter()
    test_loss = test_acc = float('nan')
    if not a.no_eval:
        model.eval()
        with torch.no_grad():
            logits = model(xte)
            test_loss = F.cross_entropy(logits, yte).item()
            test_acc = (logits.argmax(1) == yte).float().mean().item()
    t2 = time.perf_counter()
    last = loss.item()
    secs = (t1 - t0) * per_epoch / steps
    print(f'{ep},{loss_sum.item() / seen:.5f},{test_loss:.5f},{test_acc:.4f},{secs:.3f},{t2 - t1:.3f},'
          f'{seen / (t1 - t0):.0f}', flush=True)
print(f'# loss: first batch {first:.4f}, last batch {last:.4f}: {"falls" if last < first else "DOES NOT FALL"}')
sys.exit(0 if last < first else 1)
