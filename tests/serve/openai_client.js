// OpenAI's official Node client against decodebook-serve (issue 38): a completion, a stream, n = 3,
// logprobs, echo (the prompt scored with max_tokens 0) and a refused request, each printed as one
// JSON object that tests/serve/test_serve.py checks against decodebook-generate.
//
//   node tests/serve/openai_client.js PORT
//
// The client is the pinned `openai` package tools/install-deps.sh --clients puts in the cache
// folder; without it this exits 77 (ctest's "skipped"), saying how to install it.
'use strict';
const os = require('os');
const path = require('path');

const cache = process.env.DECODEBOOK_CACHE ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'decodebook');
let OpenAI;
try {
  const mod = require(path.join(cache, 'npm-clients', 'node_modules', 'openai'));
  OpenAI = mod.OpenAI || mod.default || mod;
} catch (e) {
  console.error(`openai_client.js: no openai package in ${cache}/npm-clients: run tools/install-deps.sh --clients`);
  process.exit(77);
}

const port = process.argv[2];
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 60000 });
const model = process.argv[3] || 'fortunes-gpt2';

async function main() {
  const base = { model, prompt: 'The best way to', max_tokens: 12, temperature: 0.8, top_p: 0.9, seed: 7 };
  const out = {};
  const completion = await client.completions.create(base);
  out.completion = completion.choices[0].text;
  out.finish_reason = completion.choices[0].finish_reason;
  out.usage = completion.usage;
  const stream = await client.completions.create({ ...base, stream: true });
  out.stream = '';
  for await (const chunk of stream) for (const choice of chunk.choices) out.stream += choice.text;
  const three = await client.completions.create({ ...base, n: 3, seed: 11 });
  out.n = three.choices.map((c) => c.text);
  const withLogprobs = await client.completions.create({ ...base, max_tokens: 6, seed: 3, temperature: 0.9, top_p: 1, logprobs: 2 });
  out.logprobs = withLogprobs.choices[0].logprobs;
  const echo = await client.completions.create({ model, prompt: 'The best way to', max_tokens: 0, echo: true, logprobs: 1 });
  out.echo = { text: echo.choices[0].text, logprobs: echo.choices[0].logprobs };
  try {
    await client.completions.create({ ...base, top_p: 2 });
    out.error = null;
  } catch (e) {
    out.error = { status: e.status, param: e.param, type: e.type, message: e.message };
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => {
  console.error('openai_client.js:', e);
  process.exit(1);
});
