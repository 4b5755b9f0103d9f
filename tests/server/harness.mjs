// What the server tests share: a minimal TAP harness, starting burrow-cli serve and other
// burrow-cli commands, and raw HTTP requests.
import { spawn } from 'node:child_process';
import http from 'node:http';

export async function loadOpenAI() {
  try {
    return (await import('openai')).default;
  } catch (e) {
    console.log(`Bail out! the openai package is missing (npm ci --prefix tests/server): ${e.message}`);
    process.exit(1);
  }
}

const tests = [];
const children = [];

export const test = (name, fn) => tests.push({ name, fn });

export function assert(cond, what) {
  if (!cond) throw new Error(`assertion failed: ${what}`);
}

export function equal(a, b, what) {
  if (a !== b) throw new Error(`${what}: expected ${JSON.stringify(b)}, got ${JSON.stringify(a)}`);
}

// Starts `cli serve --model modelDir`; resolves with { url, child } once it listens. The
// model answers to 'm'.
export function startServer(cli, modelDir, extra = [], env = process.env) {
  return new Promise((resolve, reject) => {
    const child = spawn(cli, ['serve', '--model', modelDir, '--port', '0', '--threads', '2',
                              '--served-model-name', 'm', ...extra],
                        { stdio: ['ignore', 'pipe', 'pipe'], env });
    children.push(child);
    let out = '', err = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/Listening on (http:\/\/\S+\/)/);
      if (m) resolve({ url: m[1], child });
    });
    child.stderr.on('data', (d) => { err += d; });
    child.on('exit', (code) => reject(new Error(`server exited (${code}): ${err}`)));
  });
}

// Runs burrow-cli to completion with input on stdin.
export function runCli(cli, args, input = '') {
  return new Promise((resolve) => {
    const child = spawn(cli, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '', err = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { err += d; });
    child.on('close', (code) => resolve({ code, out, err }));
    child.stdin.on('error', () => {});
    child.stdin.end(input);
  });
}

// POSTs a JSON body to /v1/chat/completions; resolves with { status, body, json }.
export function post(base, object) {
  const body = JSON.stringify(object);
  return new Promise((resolve, reject) => {
    const req = http.request(new URL('/v1/chat/completions', base), {
      method: 'POST', headers: { 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      let data = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { data += d; });
      res.on('end', () => {
        let json = null;
        try { json = JSON.parse(data); } catch { /* not JSON */ }
        resolve({ status: res.statusCode, body: data, json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

// Runs the tests in order as TAP, stops the servers, exits 1 when one failed.
export async function run(cleanup = () => {}) {
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
  for (const c of children) c.removeAllListeners('exit'), c.kill('SIGKILL');
  cleanup();
  process.exit(failed ? 1 : 0);
}
