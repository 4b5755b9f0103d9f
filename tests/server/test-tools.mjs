// Tools over the OpenAI API, with the official openai client against burrow-cli-testing
// serve (burrow-cli plus test hooks): the checkpoint's own chat template (Qwen3's, copied
// from tests/fixtures/templates) renders tools and tool results, and the replies are
// scripted (BURROW_TEST_SCRIPTED_REPLY) in Qwen3's tool-call syntax. Printed as TAP.
//
//   node test-tools.mjs BURROW_CLI_TESTING ORACLES_DIR RUN_FIXTURES_DIR TEMPLATES_DIR
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const [cli, oracles, runFixtures, templates] = process.argv.slice(2).map((p) => path.resolve(p));
let OpenAI;
try {
  OpenAI = (await import('openai')).default;
} catch (e) {
  console.log(`Bail out! the openai package is missing (npm ci --prefix tests/server): ${e.message}`);
  process.exit(1);
}

const tests = [];
const test = (name, fn) => tests.push({ name, fn });
function assert(cond, what) {
  if (!cond) throw new Error(`assertion failed: ${what}`);
}
function equal(a, b, what) {
  if (a !== b) throw new Error(`${what}: expected ${JSON.stringify(b)}, got ${JSON.stringify(a)}`);
}

// An oracle with its fixture tokenizer and a publisher's template as chat_template.jinja.
function makeModel(oracle, tokenizer, template, eos) {
  const src = path.join(oracles, oracle);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'burrow-tools-'));
  for (const f of ['model.safetensors.index.json', 'model-00001-of-00002.safetensors',
                   'model-00002-of-00002.safetensors'])
    fs.symlinkSync(path.join(src, f), path.join(dir, f));
  for (const f of tokenizer)
    fs.copyFileSync(path.join(runFixtures, oracle, f), path.join(dir, f));
  const config = JSON.parse(fs.readFileSync(path.join(src, 'config.json'), 'utf8'));
  if (eos !== undefined) config.eos_token_id = eos;
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config));
  fs.copyFileSync(path.join(templates, template, 'template.jinja'), path.join(dir, 'chat_template.jinja'));
  return dir;
}

// Starts burrow-cli-testing serve; resolves with the child and its base URL.
function startServer(dir, env) {
  const child = spawn(cli, ['serve', '--model', dir, '--port', '0', '--threads', '2',
                            '--served-model-name', 'm'], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env },
  });
  return new Promise((resolve, reject) => {
    let out = '', err = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/Listening on (http:\/\/\S+\/)/);
      if (m) resolve({ child, url: m[1] });
    });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => reject(new Error(`server exited (${code}): ${err}`)));
  });
}

const CALL = '<think>\nThe user wants the weather.\n</think>\n\n<tool_call>\n{"name": "get_weather", ' +
             '"arguments": {"city": "Lyon", "unit": "celsius"}}\n</tool_call>';
const FINAL = 'It is 21 °C and clear in Lyon.';
const TOOLS = [{
  type: 'function',
  function: {
    name: 'get_weather', description: 'Current weather for a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' },
                                                unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
                  required: ['city'] },
  },
}];

// The kimi_linear oracle with Qwen3's template; its replies are scripted.
const modelDir = makeModel('kimi_linear', ['tiktoken.model', 'tokenizer_config.json'], 'Qwen-Qwen3-0.6B');
const script = path.join(modelDir, 'script.json');
const promptLog = path.join(modelDir, 'prompts.txt');
fs.writeFileSync(script, JSON.stringify([CALL, FINAL, CALL, FINAL]));

const { child, url } = await startServer(modelDir, { BURROW_TEST_SCRIPTED_REPLY: script,
                                                     BURROW_TEST_PROMPT_LOG: promptLog });
const client = new OpenAI({ baseURL: url + 'v1', apiKey: 'unused', maxRetries: 0 });
const prompts = () => fs.readFileSync(promptLog, 'utf8').split('\n=====\n');

const question = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Weather in Lyon?' }];

test('round trip: tools offered, a tool call back, the result sent, a final answer', async () => {
  const first = await client.chat.completions.create({ model: 'm', messages: question, tools: TOOLS });
  const c = first.choices[0];
  equal(c.finish_reason, 'tool_calls', 'finish_reason');
  equal(c.message.tool_calls.length, 1, 'one call');
  const call = c.message.tool_calls[0];
  equal(call.type, 'function', 'type');
  equal(call.function.name, 'get_weather', 'name');
  assert(/^call_/.test(call.id), `id ${call.id}`);
  equal(JSON.stringify(JSON.parse(call.function.arguments)), '{"city":"Lyon","unit":"celsius"}', 'arguments');
  equal(c.message.reasoning_content, 'The user wants the weather.\n', 'reasoning_content');
  assert(c.message.content === null || c.message.content === '', `content ${c.message.content}`);
  assert(prompts()[0].includes('"name": "get_weather"') && prompts()[0].includes('<tools>'),
         'the template declared the tool');

  const second = await client.chat.completions.create({
    model: 'm', tools: TOOLS,
    messages: [...question, c.message,
               { role: 'tool', tool_call_id: call.id, content: '{"temp": 21, "sky": "clear"}' }],
  });
  equal(second.choices[0].finish_reason, 'stop', 'final finish_reason');
  equal(second.choices[0].message.content, FINAL, 'final answer');
  assert(second.choices[0].message.tool_calls === undefined, 'no calls in the answer');
  const p = prompts()[1];
  assert(p.includes('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lyon", "unit": "celsius"}}\n</tool_call>'),
         'the assistant call was rendered with arguments as an object');
  assert(p.includes('<tool_response>\n{"temp": 21, "sky": "clear"}\n</tool_response>'), 'the tool result');
  assert(p.endsWith('<|im_start|>assistant\n'), 'the generation prompt');
});

test('streamed: reasoning and a tool call as deltas, finish_reason tool_calls', async () => {
  const stream = await client.chat.completions.create({ model: 'm', messages: question, tools: TOOLS,
                                                        stream: true });
  let reasoning = '', content = '', finish = null;
  const calls = [];
  for await (const chunk of stream) {
    const ch = chunk.choices[0];
    if (!ch) continue;
    if (ch.delta.reasoning_content) reasoning += ch.delta.reasoning_content;
    if (ch.delta.content) content += ch.delta.content;
    for (const tc of ch.delta.tool_calls || []) {
      calls[tc.index] ??= { id: '', name: '', arguments: '' };
      if (tc.id) calls[tc.index].id = tc.id;
      if (tc.function?.name) calls[tc.index].name += tc.function.name;
      if (tc.function?.arguments) calls[tc.index].arguments += tc.function.arguments;
    }
    if (ch.finish_reason) finish = ch.finish_reason;
  }
  equal(finish, 'tool_calls', 'finish_reason');
  equal(reasoning, 'The user wants the weather.\n', 'reasoning');
  equal(content, '', 'content');
  equal(calls.length, 1, 'calls');
  equal(calls[0].name, 'get_weather', 'name');
  equal(JSON.parse(calls[0].arguments).city, 'Lyon', 'arguments');
  const done = await client.chat.completions.create({ model: 'm', messages: question, stream: true });
  let text = '';
  for await (const chunk of done) text += chunk.choices[0]?.delta?.content || '';
  equal(text, FINAL, 'streamed final answer');
});

test('400 for a tool schema that is not JSON Schema shaped, and for an unknown tool_choice', async () => {
  for (const [tools, choice, param] of [
    [[{ type: 'function', function: { name: 'f', parameters: 'object' } }], undefined, 'tools[0]'],
    [[{ type: 'function', function: { name: 'f', parameters: { type: 'object', properties: [1] } } }], undefined, 'tools[0]'],
    [[{ type: 'function', function: { name: 'bad name!' } }], undefined, 'tools[0]'],
    [[{ type: 'retrieval' }], undefined, 'tools[0]'],
    [TOOLS, { type: 'function', function: { name: 'nope' } }, 'tool_choice'],
  ]) {
    try {
      await client.chat.completions.create({ model: 'm', messages: question, tools, tool_choice: choice });
      throw new Error(`accepted ${JSON.stringify(tools)}`);
    } catch (e) {
      equal(e.status, 400, `status for ${JSON.stringify(tools)}`);
      equal(e.param, param, 'param');
    }
  }
});

// tool_choice: "required" and a named function must get a call (this server does not
// constrain decoding, so a reply without one is an error, never text that pretends), and
// "none" hides the tools from the template and parses no calls.
const TIME_TOOL = { type: 'function', function: { name: 'get_time', description: 'The time.',
                                                  parameters: { type: 'object', properties: {} } } };
const scriptOnly = (reply) => fs.writeFileSync(script, JSON.stringify([reply]));
async function refused(params, what) {
  try {
    const r = await client.chat.completions.create(params);
    if (params.stream) for await (const chunk of r) void chunk;
  } catch (e) {
    if (!params.stream) equal(e.status, 422, `${what}: status`);
    equal(e.code, 'tool_choice_not_followed', `${what}: code`);
    equal(e.type, 'server_error', `${what}: type`);
    return e;
  }
  throw new Error(`${what}: answered`);
}

test('tool_choice required: a call is returned, a reply without one is refused', async () => {
  scriptOnly(CALL);
  const ok = await client.chat.completions.create({ model: 'm', messages: question, tools: TOOLS,
                                                    tool_choice: 'required' });
  equal(ok.choices[0].finish_reason, 'tool_calls', 'finish_reason');
  equal(ok.choices[0].message.tool_calls[0].function.name, 'get_weather', 'name');
  scriptOnly('<think>\nNo tool needed.\n</think>\n\n' + FINAL);
  const e = await refused({ model: 'm', messages: question, tools: TOOLS, tool_choice: 'required' },
                          'required, whole');
  assert(/required/.test(e.message), `message ${e.message}`);
  await refused({ model: 'm', messages: question, tools: TOOLS, tool_choice: 'required', stream: true },
                'required, streamed');
  // Streamed with a call: the reasoning held back until the call still arrives, in order.
  scriptOnly(CALL);
  const stream = await client.chat.completions.create({ model: 'm', messages: question, tools: TOOLS,
                                                        tool_choice: 'required', stream: true });
  const order = [];
  let reasoning = '';
  for await (const chunk of stream) {
    const d = chunk.choices[0]?.delta || {};
    if (d.reasoning_content) { reasoning += d.reasoning_content; order.push('r'); }
    if (d.tool_calls) order.push('c');
  }
  equal(reasoning, 'The user wants the weather.\n', 'streamed reasoning');
  equal(order[order.length - 1], 'c', 'the call comes after the reasoning');
  // "required" needs tools.
  try {
    await client.chat.completions.create({ model: 'm', messages: question, tool_choice: 'required' });
    throw new Error('accepted required without tools');
  } catch (err) {
    equal(err.status, 400, 'status without tools');
    equal(err.param, 'tool_choice', 'param without tools');
  }
});

test('tool_choice naming a function: only it is offered, and only a call to it counts', async () => {
  scriptOnly(CALL);
  const named = { type: 'function', function: { name: 'get_weather' } };
  const ok = await client.chat.completions.create({ model: 'm', messages: question,
                                                    tools: [TIME_TOOL, ...TOOLS], tool_choice: named });
  equal(ok.choices[0].finish_reason, 'tool_calls', 'finish_reason');
  equal(ok.choices[0].message.tool_calls.length, 1, 'one call');
  const p = prompts().at(-2);  // the log ends with a separator
  assert(p.includes('"name": "get_weather"') && !p.includes('get_time'), 'only the named tool declared');
  const e = await refused({ model: 'm', messages: question, tools: [TIME_TOOL, ...TOOLS],
                            tool_choice: { type: 'function', function: { name: 'get_time' } } },
                          'a call to another function');
  assert(e.message.includes("'get_time'"), `message ${e.message}`);
});

test('tool_choice none: the tools are not declared and a call-like reply stays text', async () => {
  scriptOnly(CALL);
  const r = await client.chat.completions.create({ model: 'm', messages: question, tools: TOOLS,
                                                   tool_choice: 'none' });
  equal(r.choices[0].finish_reason, 'stop', 'finish_reason');
  assert(r.choices[0].message.tool_calls === undefined, 'no calls');
  assert(r.choices[0].message.content.includes('<tool_call>'), `content ${r.choices[0].message.content}`);
  const p = prompts().at(-2);  // the log ends with a separator
  assert(!p.includes('<tools>') && !p.includes('get_weather'), 'no tools in the prompt');
});

// logprobs through the template: the glm52 oracle (its fixture tokenizer covers ASCII) with
// GLM-4.6's template, generating for real, greedy, so the chosen token is the top
// alternative; streamed entries are the same as whole ones.
test('logprobs and top_logprobs through the template, whole and streamed', async () => {
  const dir = makeModel('glm52', ['tokenizer.json'], 'GLM-4.6', [96, 103, 105]);
  const server = await startServer(dir, {});
  try {
    const glm = new OpenAI({ baseURL: server.url + 'v1', apiKey: 'unused', maxRetries: 0 });
    const params = { model: 'm', messages: question, max_tokens: 6, temperature: 0, logprobs: true,
                     top_logprobs: 3 };
    const whole = await glm.chat.completions.create(params);
    const entries = whole.choices[0].logprobs.content;
    equal(entries.length, whole.usage.completion_tokens, 'one entry per generated token');
    assert(entries.length > 0, 'some tokens');
    for (const e of entries) {
      equal(e.top_logprobs.length, 3, 'three alternatives');
      assert(e.logprob <= 0, `logprob ${e.logprob}`);
      equal(e.token, e.top_logprobs[0].token, 'greedy picks the top alternative');
      equal(e.logprob, e.top_logprobs[0].logprob, 'its logprob');
      assert(e.top_logprobs[0].logprob >= e.top_logprobs[1].logprob &&
             e.top_logprobs[1].logprob >= e.top_logprobs[2].logprob, 'sorted');
      equal(Buffer.from(e.bytes).toString('utf8'), e.token, 'bytes');
    }
    const streamed = [];
    const stream = await glm.chat.completions.create({ ...params, stream: true });
    for await (const chunk of stream) streamed.push(...(chunk.choices[0]?.logprobs?.content || []));
    // The same tokens; the logprobs to float rounding (the second request reuses the
    // first's decode state, and a one-token forward sums in another order than a prefill).
    equal(JSON.stringify(streamed.map((e) => e.token)), JSON.stringify(entries.map((e) => e.token)),
          'streamed tokens');
    for (const [i, e] of streamed.entries())
      assert(Math.abs(e.logprob - entries[i].logprob) < 1e-5, `logprob ${i}: ${e.logprob} vs ${entries[i].logprob}`);
  } finally {
    server.child.removeAllListeners('exit');
    server.child.kill('SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

console.log(`1..${tests.length}`);
let failed = 0;
for (const [i, t] of tests.entries()) {
  try {
    await t.fn();
    console.log(`ok ${i + 1} - ${t.name}`);
  } catch (e) {
    failed++;
    console.log(`not ok ${i + 1} - ${t.name}`);
    for (const line of String(e.stack || e).split('\n')) console.log(`# ${line}`);
  }
}
child.removeAllListeners('exit');
child.kill('SIGKILL');
fs.rmSync(modelDir, { recursive: true, force: true });
process.exit(failed ? 1 : 0);
