// run.js - run an ONNX model with onnxruntime-node (CPU) for tests/test_onnx.c.
//
//   node tests/onnx/run.js MODEL.onnx INPUT.f32 DIMS OUTPUT.f32
//
// INPUT.f32 holds N samples of float32 (little-endian) of shape DIMS
// ("784" or "1,28,28"); the model's one input gets batches of them as
// [n, ...DIMS]. A model of several named inputs takes DIMS as
// NAME=DIMS+NAME=DIMS... ("top=1,12,28+bottom=448"): each sample is their
// slices one after the other, and input NAME gets its slice of each as
// [n, ...DIMS]. The output ([n, classes]) is appended to OUTPUT.f32
// as float32; a model with several outputs (a network's heads, [n, size]
// each) gets each sample's outputs one after the other, in the graph's
// order, as one row. Prints "N samples, C outputs each" on stdout (C: all
// outputs of a sample), and for several outputs a line "outputs NAME [n,
// size], ...".
// Exit status 0 ok, 1 a failure (the message on stderr), 3 when
// onnxruntime-node is not installed (the test then skips).
'use strict';
const fs = require('fs');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (err) {
  console.error(`run.js: onnxruntime-node is not installed (${err.message.split('\n')[0]}); run 'npm ci' in tests/onnx`);
  process.exit(3);
}

async function main() {
  const [model, input, dimsArg, output] = process.argv.slice(2);
  if (!output) {
    console.error('usage: node run.js MODEL.onnx INPUT.f32 DIMS OUTPUT.f32');
    process.exit(1);
  }
  const parts = dimsArg.split('+').map((p) => {
    const [name, d] = p.includes('=') ? p.split('=') : [null, p];
    const dims = d.split(',').map(Number);
    return { name, dims, size: dims.reduce((a, b) => a * b, 1) };
  });
  const per = parts.reduce((a, p) => a + p.size, 0);
  const buf = fs.readFileSync(input);
  // a copy: a small Buffer may start at an offset that is not 4-aligned
  const x = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.length));
  const n = x.length / per;
  if (!Number.isInteger(n)) throw new Error(`${input}: ${x.length} floats is not a whole number of samples of ${per}`);
  const session = await ort.InferenceSession.create(model, { executionProviders: ['cpu'], intraOpNumThreads: 1 });
  if (parts.length === 1 && !parts[0].name) parts[0].name = session.inputNames[0];
  const missing = parts.filter((p) => !session.inputNames.includes(p.name));
  if (missing.length || parts.length !== session.inputNames.length)
    throw new Error(`the model's inputs are ${session.inputNames.join(', ')}, DIMS names ${parts.map((p) => p.name).join(', ')}`);
  const outNames = session.outputNames;
  const chunks = [];
  let classes = 0, shapes = [];
  for (let i = 0; i < n; i += 1000) {
    const m = Math.min(1000, n - i);
    const feeds = {};
    let off = 0;
    for (const p of parts) {
      const v = new Float32Array(m * p.size);
      for (let j = 0; j < m; j++)
        v.set(x.subarray((i + j) * per + off, (i + j) * per + off + p.size), j * p.size);
      feeds[p.name] = new ort.Tensor('float32', v, [m, ...p.dims]);
      off += p.size;
    }
    const res = await session.run(feeds);
    const ys = outNames.map((name) => res[name]);
    // values per sample of each output: [n, classes] or [n, T, classes]
    const sizes = ys.map((y) => y.data.length / m);
    classes = ys.length > 1 ? sizes.reduce((a, b) => a + b, 0) : ys[0].dims[1];
    shapes = ys.map((y, k) => `${outNames[k]} [${y.dims.join(', ')}]`);
    if (ys.length === 1) {
      chunks.push(Buffer.from(ys[0].data.buffer, ys[0].data.byteOffset, ys[0].data.byteLength));
      continue;
    }
    const rows = new Float32Array(m * classes);
    for (let j = 0; j < m; j++) {
      let at = j * classes;
      ys.forEach((y, k) => {
        rows.set(y.data.subarray(j * sizes[k], (j + 1) * sizes[k]), at);
        at += sizes[k];
      });
    }
    chunks.push(Buffer.from(rows.buffer));
  }
  fs.writeFileSync(output, Buffer.concat(chunks));
  console.log(`${n} samples, ${classes} outputs each`);
  if (outNames.length > 1) console.log(`outputs ${shapes.join(', ')}`);
}

main().catch((err) => {
  console.error(`run.js: ${err.message}`);
  process.exit(1);
});
