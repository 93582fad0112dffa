#!/usr/bin/env python3
"""forge.py - rebuild the forged checkpoints of tests/fuzz/regress/ from the
seed checkpoints in tests/fuzz/corpus/checkpoint/ (the defects found so far).

Each is a seed with a field changed and its length and CRC-32 recomputed,
as an attacker would. The resume ones carry fuzz_resume's three-byte
prefix (flags, batch size - 1, samples - 1). Run from the top directory:
    python3 tests/fuzz/forge.py
"""
import struct, zlib, os

SEEDS = 'tests/fuzz/corpus/checkpoint/'
REGRESS = 'tests/fuzz/regress/'


def fields(b):
    """Offsets of the fields after the config, by name."""
    off = 24
    for _ in range(3):                          # config name, base dir, text
        (n,) = struct.unpack_from('<I', b, off)
        off += 4 + n
    (nsets,) = struct.unpack_from('<I', b, off)
    off += 4
    for _ in range(nsets):
        (n,) = struct.unpack_from('<I', b, off)
        off += 4 + n
    f = {}
    for name, fmt in (('mode', 'I'), ('epoch', 'I'), ('index', 'q'), ('id', 'q'),
                      ('loss_sum', 'd'), ('correct', 'q'), ('samples', 'q'),
                      ('seconds', 'd'), ('m_epoch', 'I'), ('train_loss', 'd'),
                      ('train_acc', 'd'), ('val_loss', 'd'), ('val_acc', 'd'),
                      ('best_val_acc', 'd'), ('ngates', 'I')):
        f[name] = (off, '<' + fmt)
        off += struct.calcsize(fmt)
    (ngates,) = struct.unpack_from('<I', b, f['ngates'][0])
    for g in range(ngates):                     # step, rng, tensors
        f['g%d.step' % (g + 1)] = (off, '<q')
        off += 8 + 32
        (nt,) = struct.unpack_from('<I', b, off)
        off += 4
        for _ in range(nt):
            (n,) = struct.unpack_from('<I', b, off)
            off += 4 + n
            (rank,) = struct.unpack_from('<I', b, off)
            off += 4 + 4 * rank
            (count,) = struct.unpack_from('<Q', b, off)
            off += 8 + 4 * count
    f['ngates_n'] = ngates
    return f


def forge(seed, **changes):
    b = bytearray(open(SEEDS + seed, 'rb').read())
    f = fields(b)
    steps = changes.pop('steps', None)
    if steps is not None:                       # every gate steps once per batch
        for g in range(f['ngates_n']):
            changes.setdefault('g%d.step' % (g + 1), steps)
    for k, v in changes.items():
        struct.pack_into(f[k][1], b, f[k][0], v)
    struct.pack_into('<Q', b, 16, len(b))
    struct.pack_into('<I', b, len(b) - 4, zlib.crc32(bytes(b[:-4])))
    return bytes(b)


def write(target, name, data, prefix=b''):
    os.makedirs(REGRESS + target, exist_ok=True)
    with open(REGRESS + target + '/' + name, 'wb') as out:
        out.write(prefix + data)


# The seeds were trained on 48 samples, batch 8: 6 batches per epoch;
# fuzz_resume's prefix 00 07 2f resumes them on 48 samples, batch 8.
SAME = b'\x00\x07\x2f'
# a negative position id: wheels resume writes slots[id % K] out of bounds
write('resume', 'position-id-negative-wheels',
      forge('wh-epoch-0001.bin', id=-1), SAME)
# a negative or huge optimizer step: assert(t >= 1) in optim.c / overflow
write('resume', 'optimizer-step-negative', forge('ff-epoch-0001.bin', **{'g1.step': -1}), SAME)
write('resume', 'optimizer-step-huge',
      forge('wh-epoch-0001.bin', **{'g1.step': 2**63 - 1}), SAME)
# A forged position is otherwise consistent (every gate's step equals the
# position id, no metrics of an epoch not reached yet), so a reader that
# checks fields against each other still has to catch the defect itself.
# a checkpoint at an epoch's last batch (Ctrl-C during flip-flop's
# validation wrote "batch 6 of 6"): it must resume
write('resume', 'position-at-epochs-last-batch',
      forge('ff-epoch-0001.bin', epoch=0, index=6, id=6, steps=6, m_epoch=0,
            samples=48, correct=20, loss_sum=50.0, seconds=0.5), SAME)
# mid-epoch, resumed with another batch size (16: 3 batches per epoch,
# the position says batch 4): deadlocked until killed
write('resume', 'position-mid-epoch-other-batch-size',
      forge('ff-epoch-0001.bin', epoch=0, index=4, id=4, steps=4, m_epoch=0,
            samples=32, correct=10, loss_sum=35.0, seconds=0.5), b'\x04\x0f\x2f')
# a position past the epoch's end for the data at hand: the sentinel
# waits forever (index 100 of 6), or the provider reads past its
# permutation (index 2^35)
write('resume', 'position-index-past-epoch',
      forge('wh-epoch-0001.bin', index=100, id=106, steps=106, samples=800,
            correct=300, loss_sum=900.0), SAME)
write('resume', 'position-index-past-epoch-provider-overread',
      forge('wh-epoch-0001.bin', index=2**35, id=2**35 + 6, steps=2**35 + 6,
            samples=2**38, correct=2**37, loss_sum=1e9), SAME)
# hostile running totals: nan loss sum, infinite seconds mid-epoch
write('resume', 'running-totals-nan',
      forge('ff-epoch-0001.bin', epoch=1, index=2, id=8, steps=8,
            loss_sum=float('nan'), samples=16, correct=5, seconds=float('inf')), SAME)
