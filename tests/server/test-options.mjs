// Every request option of burrow-cli serve does what it says, or is refused: logit_bias,
// frequency_penalty, presence_penalty and response_format (constrained decoding) change the
// reply as specified; fields the server does not implement, tools the template cannot
// declare and schema keywords it cannot enforce get 400; a prompt over the context gets
// context_length_exceeded on every path. Uses the demo model (its own Jinja template) and
// the official openai client. Printed as TAP.
//
//   node test-options.mjs BURROW_CLI DEMO_MODEL_DIR TEMPLATES_DIR
import path from 'node:path';

import { assert, equal, loadOpenAI, post, run, runCli, startServer, test } from './harness.mjs';

const [cli, demo, templates] = process.argv.slice(2).map((p) => path.resolve(p));
const OpenAI = await loadOpenAI();
const server = await startServer(cli, demo);
const client = new OpenAI({ baseURL: server.url + 'v1', apiKey: 'unused', maxRetries: 0 });
const user = (content) => [{ role: 'user', content }];
const ask = { model: 'm', messages: user('Tell me about the house.'), temperature: 0 };

async function tokenId(text) {
  const r = await runCli(cli, ['tokenize', '--model', demo, '--no-special'], text);
  equal(r.code, 0, `tokenize ${text}`);
  const ids = r.out.trim().split(',');
  equal(ids.length, 1, `'${text}' is one token of the demo tokenizer`);
  return Number(ids[0]);
}

const tokens = (r) => r.choices[0].logprobs.content.map((e) => e.token);

async function refused(body, param, code) {
  const r = await post(server.url, { model: 'm', messages: user('hi'), max_tokens: 2, ...body });
  equal(r.status, 400, `status for ${JSON.stringify(body)} (${r.body})`);
  equal(r.json.error.type, 'invalid_request_error', 'type');
  equal(r.json.error.param, param, 'param');
  if (code !== undefined) equal(r.json.error.code, code, 'code');
  return r.json.error;
}

test('logit_bias: +100 forces a token, -100 forbids one, at temperature 0', async () => {
  const emma = await tokenId('Emma');
  const forced = await client.chat.completions.create({
    ...ask, max_tokens: 4, logit_bias: { [emma]: 100 } });
  equal(forced.choices[0].message.content, 'EmmaEmmaEmmaEmma', 'forced content');
  equal(forced.choices[0].finish_reason, 'length', 'finish_reason');

  const base = await client.chat.completions.create({ ...ask, max_tokens: 8, logprobs: true });
  const first = tokens(base)[0];
  const banned = await client.chat.completions.create({
    ...ask, max_tokens: 8, logprobs: true, logit_bias: { [await tokenId(first)]: -100 } });
  assert(!tokens(banned).includes(first), `'${first}' still in ${JSON.stringify(tokens(banned))}`);
  assert(banned.choices[0].message.content !== base.choices[0].message.content, 'a new reply');
  // A small bias leaves greedy output alone when it does not change the order.
  const nudged = await client.chat.completions.create({
    ...ask, max_tokens: 8, logit_bias: { [emma]: 0.001 } });
  equal(nudged.choices[0].message.content, base.choices[0].message.content, 'tiny bias');
});

test('logit_bias: out of range, not a token id, or not an id: 400 naming the entry', async () => {
  await refused({ logit_bias: { 5: 101 } }, 'logit_bias.5', 'invalid_value');
  await refused({ logit_bias: { 5: -100.5 } }, 'logit_bias.5', 'invalid_value');
  await refused({ logit_bias: { 99999999: 1 } }, 'logit_bias.99999999', 'invalid_value');
  await refused({ logit_bias: { hello: 1 } }, 'logit_bias.hello');
  await refused({ logit_bias: { 5: 'x' } }, 'logit_bias.5');
  await refused({ logit_bias: [5] }, 'logit_bias');
});

test('frequency_penalty and presence_penalty change a repetitive greedy reply', async () => {
  const long = { ...ask, max_tokens: 60, ignore_eos: true, logprobs: true };
  const distinct = (r) => new Set(tokens(r)).size;
  const base = await client.chat.completions.create(long);
  equal(tokens(base).length, 60, 'tokens');
  assert(distinct(base) < 40, `the greedy reply repeats itself (${distinct(base)} distinct)`);
  for (const option of ['frequency_penalty', 'presence_penalty']) {
    const r = await client.chat.completions.create({ ...long, [option]: 1.5 });
    assert(distinct(r) > distinct(base), `${option}: ${distinct(r)} distinct tokens, ` +
           `${distinct(base)} without`);
    const more = await client.chat.completions.create({ ...long, [option]: -2 });
    assert(distinct(more) <= distinct(base), `${option} -2: ${distinct(more)} distinct`);
  }
  await refused({ frequency_penalty: 2.5 }, 'frequency_penalty', 'invalid_value');
  await refused({ presence_penalty: -3 }, 'presence_penalty', 'invalid_value');
});

test('burrow-cli chat: --frequency-penalty and --presence-penalty, checked like the API', async () => {
  const chat = (extra) => runCli(cli, ['chat', '--model', demo, '--threads', '2', '--quiet',
                                       '--temperature', '0', '-n', '40', '--ignore-eos', ...extra],
                                 'Tell me about the house.\n');
  const base = await chat([]);
  equal(base.code, 0, `chat (${base.err})`);
  for (const flag of ['--frequency-penalty', '--presence-penalty']) {
    const r = await chat([flag, '1.5']);
    equal(r.code, 0, `${flag} (${r.err})`);
    assert(r.out !== base.out, `${flag} changes the greedy reply`);
    const bad = await chat([flag, '3']);
    equal(bad.code, 2, `${flag} 3 is refused`);
  }
});

test('fields the server does not implement: 400 unsupported_parameter naming them', async () => {
  for (const [field, value] of [['functions', [{ name: 'f' }]], ['function_call', 'auto'],
                                ['audio', { voice: 'x' }], ['modalities', ['text', 'audio']],
                                ['prediction', { type: 'content', content: 'x' }],
                                ['web_search_options', {}], ['some_future_field', [1]]]) {
    const e = await refused({ [field]: value }, field, 'unsupported_parameter');
    assert(e.message.includes(`'${field}'`), e.message);
  }
  const viaClient = await client.chat.completions.create({ ...ask, verbosity: 'low' })
    .then(() => null, (x) => x);
  assert(viaClient instanceof OpenAI.BadRequestError, `BadRequestError, got ${viaClient}`);
  equal(viaClient.code, 'unsupported_parameter', 'code');
  // Fields that change nothing about a reply, and any field sent as null, are served.
  const r = await post(server.url, { ...ask, max_tokens: 2, user: 'u1', store: false,
                                     metadata: { k: 'v' }, service_tier: 'auto',
                                     some_future_field: null, response_format: { type: 'text' },
                                     tools: [], presence_penalty: null });
  equal(r.status, 200, `harmless fields (${r.body})`);
});

test('tools with a template that declares none: 400 saying so', async () => {
  const tools = [{ type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } }];
  const e = await refused({ tools }, 'tools', 'unsupported_parameter');
  assert(/template/.test(e.message) && /tool/.test(e.message), e.message);
  await refused({ tools, tool_choice: 'required' }, 'tools', 'unsupported_parameter');
  const none = await post(server.url, { ...ask, max_tokens: 2, tools, tool_choice: 'none' });
  equal(none.status, 200, 'tool_choice none offers no tools: served');
});

// The JSON Schema subset the server enforces, checked here independently of it.
function validate(schema, v, where = '$') {
  const fail = (what) => { throw new Error(`${where}: ${what} (${JSON.stringify(v)})`); };
  const type = (x) => (x === null ? 'null' : Array.isArray(x) ? 'array'
    : Number.isInteger(x) ? 'integer' : typeof x);
  if (schema.anyOf) {
    const errors = [];
    for (const s of schema.anyOf) {
      try { validate(s, v, where); return; } catch (e) { errors.push(e.message); }
    }
    fail(`no anyOf branch: ${errors.join('; ')}`);
  }
  if (schema.enum && !schema.enum.some((e) => JSON.stringify(e) === JSON.stringify(v))) fail('enum');
  if ('const' in schema && JSON.stringify(schema.const) !== JSON.stringify(v)) fail('const');
  const types = schema.type === undefined ? null : [].concat(schema.type);
  if (types && !types.some((t) => t === type(v) || (t === 'number' && type(v) === 'integer')))
    fail(`type ${types}`);
  if (typeof v === 'string') {
    const n = [...v].length;
    if (n < (schema.minLength ?? 0) || n > (schema.maxLength ?? Infinity)) fail('length');
  }
  if (typeof v === 'number' && (v < (schema.minimum ?? -Infinity) || v > (schema.maximum ?? Infinity)))
    fail('range');
  if (Array.isArray(v)) {
    if (v.length < (schema.minItems ?? 0) || v.length > (schema.maxItems ?? Infinity)) fail('items');
    v.forEach((x, i) => schema.items && validate(schema.items, x, `${where}[${i}]`));
  }
  if (type(v) === 'object') {
    for (const k of schema.required ?? []) if (!(k in v)) fail(`required ${k}`);
    for (const [k, x] of Object.entries(v)) {
      if (schema.properties && k in schema.properties) validate(schema.properties[k], x, `${where}.${k}`);
      else if (schema.additionalProperties === false || (schema.properties && schema.additionalProperties === undefined))
        fail(`extra key ${k}`);
      else if (typeof schema.additionalProperties === 'object')
        validate(schema.additionalProperties, x, `${where}.${k}`);
    }
  }
}

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 12 },
    age: { type: 'integer', minimum: 0, maximum: 120 },
    height: { type: 'number', minimum: 0.5, maximum: 2.5 },
    mood: { enum: ['calm', 'cross', 'gay'] },
    friends: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 3 },
    home: { type: 'object', properties: { town: { type: 'string' } }, required: ['town'] },
    married: { type: ['boolean', 'null'] },
    note: { anyOf: [{ type: 'string', maxLength: 10 }, { type: 'null' }] },
    kind: { const: 'person' },
  },
  required: ['name', 'age', 'mood', 'home', 'kind'],
  additionalProperties: false,
};

test('response_format json_object: the reply is a JSON object, whole and streamed', async () => {
  const fmt = { ...ask, max_tokens: 40, response_format: { type: 'json_object' } };
  const r = await client.chat.completions.create(fmt);
  const text = r.choices[0].message.content;
  const v = JSON.parse(text);
  assert(v !== null && typeof v === 'object' && !Array.isArray(v), `an object: ${text}`);
  equal(r.choices[0].finish_reason, 'stop', 'it ends once the object closes');
  const plain = await client.chat.completions.create({ ...ask, max_tokens: 40 });
  assert(!plain.choices[0].message.content.startsWith('{'), 'unconstrained, it is prose');
  const stream = await client.chat.completions.create({ ...fmt, stream: true });
  let streamed = '';
  for await (const chunk of stream) for (const ch of chunk.choices) streamed += ch.delta.content ?? '';
  equal(streamed, text, 'streamed');
});

test('response_format json_schema: 50 replies at temperature 1 parse and validate', async () => {
  const t0 = Date.now();
  const texts = new Set();
  for (let seed = 0; seed < 50; seed++) {
    const r = await client.chat.completions.create({
      model: 'm', messages: user('Describe someone.'), temperature: 1, seed, max_tokens: 96,
      response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true, schema: PERSON } } });
    const text = r.choices[0].message.content;
    let v;
    try { v = JSON.parse(text); } catch (e) { throw new Error(`seed ${seed}: ${e.message}: ${text}`); }
    validate(PERSON, v, `seed ${seed}`);
    equal(r.choices[0].finish_reason, 'stop', `seed ${seed} closed within max_tokens`);
    assert(r.usage.completion_tokens <= 96, 'max_tokens');
    texts.add(text);
  }
  assert(texts.size > 40, `sampled replies differ (${texts.size} distinct)`);
  console.log(`# 50 constrained replies in ${Date.now() - t0} ms`);
});

test('a schema keyword the server cannot enforce: 400 naming the keyword', async () => {
  const param = 'response_format.json_schema.schema';
  for (const [schema, word] of [
    [{ type: 'string', pattern: '^a' }, "'pattern'"],
    [{ type: 'object', properties: { d: { type: 'string', format: 'date' } } }, "'format' is not supported at $.properties.d"],
    [{ $ref: '#/$defs/a', $defs: { a: {} } }, "'$ref'"],
    [{ oneOf: [{ type: 'string' }, { type: 'null' }] }, "'oneOf'"],
    [{ anyOf: [{ type: 'object' }, { type: 'object', properties: {} }] }, "'anyOf'"],
  ]) {
    const e = await refused({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } },
                            param, 'unsupported_schema');
    assert(e.message.includes(word), `${e.message} names ${word}`);
  }
  await refused({ response_format: { type: 'xml' } }, 'response_format.type');
  await refused({ response_format: { type: 'json_schema' } }, param);
});

test('context_length_exceeded on every path: Jinja template, whole and streamed, small and default context',
  async () => {
    const small = await startServer(cli, demo, ['--max-context', '512']);
    const huge = 'hello there '.repeat(70000);   // over the default 131,072 tokens
    for (const [base, text, limit] of [[small.url, 'hello there '.repeat(400), 512],
                                       [server.url, huge, null]]) {
      for (const stream of [false, true]) {
        const r = await post(base, { model: 'm', stream, messages: user(text) });
        equal(r.status, 400, `status (limit ${limit}, stream ${stream}): ${r.body.slice(0, 200)}`);
        equal(r.json.error.code, 'context_length_exceeded', 'code');
        equal(r.json.error.param, 'messages', 'param');
        assert(new RegExp(`maximum context length is ${limit ?? '\\d+'} tokens`).test(r.json.error.message),
               r.json.error.message);
      }
    }
    small.child.kill('SIGTERM');
  });

test('tool_choice required or named: the reply is one valid call (Qwen3 template, sampled)',
  async () => {
    const qwen = await startServer(cli, demo, ['--template',
                                               path.join(templates, 'Qwen-Qwen3-0.6B', 'template.jinja')]);
    const c = new OpenAI({ baseURL: qwen.url + 'v1', apiKey: 'unused', maxRetries: 0 });
    const weather = { type: 'object', required: ['city'], additionalProperties: false,
                      properties: { city: { type: 'string', maxLength: 12 },
                                    unit: { enum: ['celsius', 'fahrenheit'] } } };
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: weather } },
                   { type: 'function', function: { name: 'get_time', parameters: { type: 'object' } } }];
    const base = { model: 'm', messages: user('Weather in Lyon?'), tools, temperature: 1, max_tokens: 80 };
    const plain = await c.chat.completions.create({ ...base, seed: 1 });
    equal(plain.choices[0].message.tool_calls, undefined, 'unconstrained, the demo model writes prose');
    for (let seed = 0; seed < 8; seed++) {
      const named = await c.chat.completions.create({
        ...base, seed, tool_choice: { type: 'function', function: { name: 'get_weather' } } });
      equal(named.choices[0].finish_reason, 'tool_calls', `seed ${seed}: finish_reason`);
      const call = named.choices[0].message.tool_calls[0];
      equal(call.function.name, 'get_weather', 'the named function');
      validate(weather, JSON.parse(call.function.arguments), `seed ${seed} arguments`);
      const required = await c.chat.completions.create({ ...base, seed, tool_choice: 'required' });
      const rc = required.choices[0].message.tool_calls;
      assert(rc && rc.length === 1 && ['get_weather', 'get_time'].includes(rc[0].function.name),
             `seed ${seed}: one call to an offered tool: ${JSON.stringify(required.choices[0].message)}`);
      equal(typeof JSON.parse(rc[0].function.arguments), 'object', 'arguments are an object');
    }
    const stream = await c.chat.completions.create({ ...base, seed: 3, stream: true,
                                                     tool_choice: 'required' });
    let calls = 0, finish = null;
    for await (const chunk of stream)
      for (const ch of chunk.choices) {
        calls += ch.delta.tool_calls?.length ?? 0;
        finish = ch.finish_reason ?? finish;
      }
    equal(calls, 1, 'one streamed call');
    equal(finish, 'tool_calls', 'streamed finish_reason');
    qwen.child.kill('SIGTERM');
  });

await run();
