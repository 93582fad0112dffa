// time.js - time an ONNX model's forward in onnxruntime-node (CPU, one
// thread), a peer for akkctl's own forward (akkctl bench --layers).
//
//   node tests/onnx/time.js MODEL.onnx DIMS BATCH [REPEATS]
//
// Runs REPEATS (default 20) batches of BATCH samples of shape DIMS
// ("28,28") filled with values in [0, 255), after 3 warm-up runs, and
// prints the best and the median milliseconds per batch, wall time.
// Exit status 0 ok, 1 a failure, 3 when onnxruntime-node is not installed.
'use strict';

let ort;
try {
  ort = require('onnxruntime-node');
} catch (err) {
  console.error(`time.js: onnxruntime-node is not installed (${err.message.split('\n')[0]}); run 'npm ci' in tests/onnx`);
  process.exit(3);
}

async function main() {
  const [model, dimsArg, batchArg, repArg] = process.argv.slice(2);
  if (!batchArg) {
    console.error('usage: node time.js MODEL.onnx DIMS BATCH [REPEATS]');
    process.exit(1);
  }
  const dims = dimsArg.split(',').map(Number);
  const batch = Number(batchArg), reps = Number(repArg || 20);
  const n = batch * dims.reduce((a, b) => a * b, 1);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) x[i] = (i * 7919 % 255);
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ['cpu'], intraOpNumThreads: 1, interOpNumThreads: 1 });
  const feed = { [session.inputNames[0]]: new ort.Tensor('float32', x, [batch, ...dims]) };
  const times = [];
  for (let i = 0; i < reps + 3; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feed);
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    if (i >= 3) times.push(ms);
  }
  times.sort((a, b) => a - b);
  console.log(`${model}: batch ${batch}, best ${times[0].toFixed(3)} ms, median ${times[times.length >> 1].toFixed(3)} ms`);
}

main().catch((err) => {
  console.error(`time.js: ${err.message}`);
  process.exit(1);
});
