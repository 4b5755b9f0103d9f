// burrow-cli serve against slow and lying clients over raw loopback sockets, printed as TAP.
//
//   node test-slow-clients.mjs BURROW_CLI DEMO_MODEL_DIR
//
// Headers or a body that do not arrive in time get 408 and a close (also without the API
// key), a Content-Length over the limit gets 413 before any body is sent, a bad one 400;
// 200 connections sending their headers a byte at a time do not delay a normal request
// past a second; at the connection limit the oldest idle connection is closed first; an
// idle connection its client closed is closed by the server too. Every wait is bounded.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

const [cli, demoModel] = process.argv.slice(2).map((p) => path.resolve(p));
const KEY = 'sekrit';
const AUTH = `Authorization: Bearer ${KEY}\r\n`;

const tests = [];
const test = (name, fn) => tests.push({ name, fn });
function assert(cond, what) {
  if (!cond) throw new Error(`assertion failed: ${what}`);
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const now = () => Number(process.hrtime.bigint() / 1000000n);

const children = [];
// The server sent non-numeric Content-Lengths leaks in libsoup 3.2.3 (lsan-libsoup.supp):
// in a sanitizer build it unwinds fully, so that the suppression can name libsoup's frame.
const LEAKY_LIBSOUP_ENV = {
  ...process.env,
  LSAN_OPTIONS: `suppressions=${path.join(path.dirname(new URL(import.meta.url).pathname),
                                          'lsan-libsoup.supp')}:print_suppressions=0`,
  ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ''}:fast_unwind_on_malloc=0`,
};
function startServer(extra, env = process.env) {
  return new Promise((resolve, reject) => {
    const child = spawn(cli, ['serve', '--model', demoModel, '--port', '0', '--threads', '1',
                              '--api-key', KEY, '--max-body', '65536', ...extra],
                        { stdio: ['ignore', 'pipe', 'pipe'], env });
    children.push(child);
    let out = '', err = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/Listening on http:\/\/([^:/]+):(\d+)\//);
      if (m) resolve({ host: m[1], port: Number(m[2]), child, err: () => err });
    });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => reject(new Error(`server exited (${code}): ${err}`)));
  });
}

// A raw connection that records what it received and when the server closed it.
function connect(srv) {
  return new Promise((resolve, reject) => {
    const c = { data: '', closedAt: null, t0: now() };
    c.sock = net.connect(srv.port, srv.host, () => resolve(c));
    c.sock.setEncoding('latin1');
    c.sock.on('data', (d) => { c.data += d; });
    c.sock.on('error', () => {});
    c.sock.on('close', () => { c.closedAt = now(); });
    c.closed = new Promise((r) => c.sock.on('close', r));
    c.sock.once('error', reject);
  });
}
const status = (c) => Number((c.data.match(/^HTTP\/1\.1 (\d+)/) ?? [])[1] ?? 0);

// Resolves once the connection holds a complete answer, or rejects after ms.
function answer(c, ms = 3000) {
  return new Promise((resolve, reject) => {
    const check = () => {
      const head = c.data.indexOf('\r\n\r\n');
      const len = Number((c.data.match(/Content-Length: (\d+)/i) ?? [])[1] ?? -1);
      if (head >= 0 && len >= 0 && c.data.length >= head + 4 + len) {
        const text = c.data.slice(0, head + 4 + len);
        c.data = c.data.slice(head + 4 + len);
        clearTimeout(timer);
        c.sock.off('data', check);
        resolve({ status: Number(text.match(/^HTTP\/1\.1 (\d+)/)[1]), text });
        return true;
      }
      return false;
    };
    const timer = setTimeout(() => {
      c.sock.off('data', check);
      reject(new Error(`no answer in ${ms} ms: ${JSON.stringify(c.data)}`));
    }, ms);
    if (!check()) c.sock.on('data', check);
  });
}
function within(promise, ms, what) {
  let timer;
  return Promise.race([promise, new Promise((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what}: nothing after ${ms} ms`)), ms);
  })]).finally(() => clearTimeout(timer));
}
const GET_MODELS = `GET /v1/models HTTP/1.1\r\nHost: x\r\n${AUTH}\r\n`;

// Sends text a byte every `every` ms until it is all sent or the connection closes.
function dribble(c, text, every) {
  let i = 0;
  const timer = setInterval(() => {
    if (c.closedAt !== null || i >= text.length) clearInterval(timer);
    else c.sock.write(text[i++]);
  }, every);
  return () => clearInterval(timer);
}

// Runs burrow-cli serve to completion (--help, refused flags).
function runServe(args) {
  return new Promise((resolve) => {
    const child = spawn(cli, ['serve', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('close', (code) => resolve({ code, out }));
  });
}

test('--help names every limit with its default; a bad value is refused naming its flag',
     async () => {
  const help = await runServe(['--help']);
  for (const flag of ['--header-timeout=S', '--body-timeout=S', '--min-body-rate=SIZE',
                      '--idle-timeout=S', '--max-connections=N'])
    assert(help.out.includes(flag), `--help lists ${flag}`);
  assert(/header-timeout.*\(10\)/.test(help.out) && /max-connections.*\(256\)/.test(help.out),
         'defaults in --help');
  for (const [flag, value] of [['--header-timeout', '0'], ['--body-timeout', '-1'],
                               ['--idle-timeout', 'nan'], ['--max-connections', '0'],
                               ['--min-body-rate', 'fast']]) {
    const r = await runServe(['--model', demoModel, flag, value]);
    assert(r.code === 2 && r.out.includes(flag),
           `${flag} ${value}: exit ${r.code}, ${r.out.trim()}`);
  }
});

// ---- the server with short limits ----

const quick = await startServer(['--header-timeout', '1', '--body-timeout', '1',
                                 '--min-body-rate', '1K', '--idle-timeout', '2'],
                                LEAKY_LIBSOUP_ENV);

test('headers sent a byte every 100 ms get 408 and a close at the 1 s limit, without a key',
     async () => {
  const c = await connect(quick);
  dribble(c, 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n' +
             'Content-Type: application/json\r\n', 100);
  await within(c.closed, 4000, 'close');
  const t = c.closedAt - c.t0;
  assert(status(c) === 408, `status 408 (${JSON.stringify(c.data.slice(0, 80))})`);
  assert(c.data.includes('"request_timeout"'), 'error code request_timeout');
  assert(t >= 950 && t < 2000, `closed at ${t} ms, limit 1000 ms`);
});

test('a connection that sends nothing gets 408 and a close at the limit', async () => {
  const c = await connect(quick);
  await within(c.closed, 4000, 'close');
  const t = c.closedAt - c.t0;
  assert(status(c) === 408 && t >= 950 && t < 2000, `408 at ${t} ms (${status(c)})`);
});

test('a body slower than --min-body-rate gets 408 and a close; a faster one is read', async () => {
  const slow = await connect(quick);
  slow.sock.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n' + AUTH +
                  'Content-Length: 60000\r\n\r\n');
  // 100 bytes every 200 ms: 500 B/s against 1 KiB/s after a 1 s grace -> cut near 2 s.
  const timer = setInterval(() => {
    if (slow.closedAt === null) slow.sock.write(' '.repeat(100));
  }, 200);
  await within(slow.closed, 6000, 'close');
  clearInterval(timer);
  const t = slow.closedAt - slow.t0;
  assert(status(slow) === 408, `status 408 (${JSON.stringify(slow.data.slice(0, 80))})`);
  assert(t >= 1500 && t < 4000, `closed at ${t} ms`);

  // 2,000 bytes every 200 ms (10 KB/s) for 2.4 s: read whole, then answered (404: no such model).
  const json = JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'hi' }] });
  const body = ' '.repeat(24000 - json.length) + json;
  const fast = await connect(quick);
  fast.sock.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n' + AUTH +
                  `Content-Length: ${body.length}\r\n\r\n`);
  for (let i = 0; i < body.length; i += 2000) {
    fast.sock.write(body.slice(i, i + 2000));
    await sleep(200);
  }
  const a = await answer(fast);
  assert(a.status === 404 && a.text.includes('model_not_found'), `answered 404 (${a.status})`);
  fast.sock.destroy();
});

test('a Content-Length over --max-body gets 413 at once, before any body, with or without a key',
     async () => {
  for (const auth of [AUTH, '']) {
    const c = await connect(quick);
    const t0 = now();
    c.sock.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n' + auth +
                 'Content-Length: 100000000\r\n\r\n');
    const a = await answer(c, 500);
    assert(a.status === 413 && a.text.includes('request_too_large'), `413 (${a.status})`);
    assert(now() - t0 < 500, `answered in ${now() - t0} ms`);
    await within(c.closed, 3000, 'close after 413');
  }
});

test('a negative, non-numeric, signed, repeated or doubled Content-Length gets 400', async () => {
  const bad = [['-5'], ['abc'], ['+5'], ['5, 5'], ['5', '5'], ['5', '7'],
               ['18446744073709551611']];
  for (const lengths of bad) {
    const c = await connect(quick);
    const h = lengths.map((l) => `Content-Length: ${l}\r\n`).join('');
    c.sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${AUTH}${h}\r\n12345`);
    const a = await answer(c, 1000);
    const want = lengths[0].length > 15 ? 413 : 400;
    assert(a.status === want, `${JSON.stringify(lengths)}: ${want} (${a.status})`);
    c.sock.destroy();
  }
  const c = await connect(quick);
  c.sock.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Length: 5\r\n` +
               'Transfer-Encoding: chunked\r\n\r\n5\r\n12345\r\n0\r\n\r\n');
  const a = await answer(c, 1000);
  assert(a.status === 400, `Content-Length with Transfer-Encoding: 400 (${a.status})`);
  c.sock.destroy();
});

test('an idle kept-alive connection is closed after --idle-timeout', async () => {
  const c = await connect(quick);
  c.sock.write(GET_MODELS);
  assert((await answer(c)).status === 200, 'served');
  const t0 = now();
  await within(c.closed, 4000, 'idle close');
  const t = c.closedAt - t0;
  assert(t >= 1900 && t < 3000 && c.data === '', `closed after ${t} ms idle, nothing sent`);
});

test('a kept-alive connection\'s next request, sent a byte every 100 ms, is closed at the limit',
     async () => {
  const c = await connect(quick);
  c.sock.write(GET_MODELS);
  assert((await answer(c)).status === 200, 'first request served');
  const t0 = now();
  dribble(c, 'GET /v1/models HTTP/1.1\r\nHost: x\r\n' + 'X-Pad: y\r\n'.repeat(20), 100);
  await within(c.closed, 4000, 'close');
  const t = c.closedAt - t0;
  assert(t >= 950 && t < 2000, `closed ${t} ms after its first byte, limit 1000 ms`);
});

test('an idle connection whose client left is closed by the server (no fd kept)', async () => {
  const fds = () => fs.readdirSync(`/proc/${quick.child.pid}/fd`).length;
  const before = fds();
  for (let i = 0; i < 20; i++) {
    const c = await connect(quick);
    c.sock.write(GET_MODELS);
    await answer(c);
    c.sock.end();
    await within(c.closed, 1000, 'the server closes when the client does');
  }
  await sleep(100);
  assert(fds() <= before, `server fds ${before} -> ${fds()}`);
});

// ---- many slow clients ----

test('200 slow-header connections delay a normal request by less than 1 s, none dropped',
     async () => {
  // A header limit far beyond the test, so that every slow client stays until the end.
  const srv = await startServer(['--header-timeout', '120']);
  const normal = async () => {
    const c = await connect(srv);
    const t0 = now();
    c.sock.write(GET_MODELS);
    const a = await answer(c, 3000);
    assert(a.status === 200, `status ${a.status}`);
    c.sock.destroy();
    return now() - t0;
  };
  const base = [];
  for (let i = 0; i < 5; i++) base.push(await normal());
  const slow = await Promise.all(Array.from({ length: 200 }, () => connect(srv)));
  // One byte to each of them every 200 ms (1,000 bytes a second in all), from one timer.
  const text = 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n' + 'X-Pad: y\r\n'.repeat(50);
  let sent = 0;
  const timer = setInterval(() => {
    for (const c of slow) if (c.closedAt === null) c.sock.write(text[sent % text.length]);
    sent++;
  }, 200);
  await sleep(500);
  let worst = 0;
  for (let i = 0; i < 5; i++) {
    worst = Math.max(worst, await normal());
    await sleep(100);
  }
  clearInterval(timer);
  const open = slow.filter((c) => c.closedAt === null).length;
  slow.forEach((c) => c.sock.destroy());
  srv.child.kill('SIGTERM');
  const alone = Math.max(...base);
  console.log(`# a normal request: slowest of 5 ${alone} ms alone, ${worst} ms beside 200 ` +
              'slow-header connections');
  assert(worst - alone < 1000, `delayed by ${worst - alone} ms`);
  assert(open === 200, `${open} of 200 slow connections still open`);
});

test('at --max-connections the oldest idle connection is closed first, then the slowest headers',
     async () => {
  const srv = await startServer(['--max-connections', '8']);
  const idle = [];
  for (let i = 0; i < 4; i++) {
    const c = await connect(srv);
    c.sock.write(GET_MODELS);
    assert((await answer(c)).status === 200, 'idle one served');
    idle.push(c);
  }
  const slow = [];
  for (let i = 0; i < 4; i++) {
    const c = await connect(srv);
    c.stop = dribble(c, 'GET /v1/models HTTP/1.1\r\nHost: x\r\n' + 'X-Pad: y\r\n'.repeat(50), 200);
    slow.push(c);
  }
  await sleep(200);
  // Each new kept-alive client closes the oldest idle one: the first four, in order.
  const fresh = [];
  for (let i = 0; i < 4; i++) {
    const c = await connect(srv);
    c.sock.write(GET_MODELS);
    assert((await answer(c)).status === 200, `new client ${i} served`);
    await within(idle[i].closed, 1000, `idle client ${i} closed`);
    assert(idle.slice(i + 1).every((o) => o.closedAt === null), `only idle client ${i} closed`);
    fresh.push(c);
  }
  assert(slow.every((c) => c.closedAt === null),
         'no slow-header client closed while idle ones remained');
  fresh.forEach((c) => c.sock.destroy());
  await sleep(200);
  // With no idle connection left, the one that has waited longest for its headers goes.
  const fill = [];
  for (let i = 0; i < 4; i++) {
    const c = await connect(srv);
    c.stop = dribble(c, 'GET /v1/models HTTP/1.1\r\nHost: x\r\n' + 'X-Pad: y\r\n'.repeat(50), 200);
    fill.push(c);
  }
  const c = await connect(srv);
  c.sock.write(GET_MODELS);
  assert((await answer(c)).status === 200, 'served at the limit');
  await within(slow[0].closed, 1000, 'oldest slow client closed');
  assert(status(slow[0]) === 408, `the evicted one got 408 (${status(slow[0])})`);
  assert(slow.slice(1).every((o) => o.closedAt === null), 'only the oldest slow client closed');
  [...slow, ...fill].forEach((o) => { o.stop(); o.sock.destroy(); });
  c.sock.destroy();
  srv.child.kill('SIGTERM');
});

// ---- run ----

console.log('TAP version 13');
let failed = 0;
for (const [i, t] of tests.entries()) {
  try {
    await within(t.fn(), 30000, t.name);
    console.log(`ok ${i + 1} - ${t.name}`);
  } catch (e) {
    failed++;
    console.log(`not ok ${i + 1} - ${t.name}`);
    console.log(`# ${e.stack.split('\n').slice(0, 3).join('\n# ')}`);
  }
}
quick.child.kill('SIGTERM');
const exit = await new Promise((r) => quick.child.on('exit', (code) => r(code)));
console.log(`${exit === 0 ? 'ok' : 'not ok'} ${tests.length + 1} - ` +
            `the server exits cleanly on SIGTERM (${exit})`);
if (exit !== 0) { failed++; console.log(`# ${quick.err().slice(-6000).replace(/\n/g, "\n# ")}`); }
console.log(`1..${tests.length + 1}`);
for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
process.exit(failed ? 1 : 0);
